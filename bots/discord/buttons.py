"""Persistent buttons that keep working after a restart: votes, quotes and Continue on a verdict,
Interject on a running debate's root message.

Each button's `custom_id` carries the debate id and the choice (`debate:vote:{id}:{choice}`,
`debate:quote:{id}`, `debate:continue:{id}`, `debate:interject:{id}`); discord.py matches it against
the `DynamicItem` templates the bot registers in `setup_hook`, so no view state lives in memory. A click
knows nothing of the core: it dispatches a client event (`on_debate_vote`, `on_debate_quote`,
`on_debate_form`, the way discord.py's own tree dispatches `app_command_completion`), and the cog that
holds the core answers it: Interject and Continue with their form (`forms.py`) for a debate the member
may see, whose submission the team cog answers the same way.

discord.py drops a click whose `custom_id` no template matches, or that the clicked message does not
carry (a forged click): `unanswered_click` finds those of ours, so the team cog answers them with the
commands' "no debate" instead of leaving Discord to say the interaction failed.
"""

from __future__ import annotations

import re
from typing import Any

import discord
from discord import ui

from orchestrator.models import DebateSpec

VOTE_EVENT = "debate_vote"  # listeners: on_debate_vote(interaction, debate_id, choice)
QUOTE_EVENT = "debate_quote"  # listeners: on_debate_quote(interaction, debate_id)
FORM_EVENT = "debate_form"  # listeners: on_debate_form(interaction, "interject" | "continue", debate_id)

VOTE_TEMPLATE = r"debate:vote:(?P<id>[0-9a-f]+):(?P<choice>[a-z0-9:_-]+)"
QUOTE_TEMPLATE = r"debate:quote:(?P<id>[0-9a-f]+)"
INTERJECT_TEMPLATE = r"debate:interject:(?P<id>[0-9a-f]+)"
CONTINUE_TEMPLATE = r"debate:continue:(?P<id>[0-9a-f]+)"
_DEBATE_ID = re.compile(r"^debate:(?:vote|quote|continue|interject):([0-9a-f]+)")
_TEMPLATES = tuple(re.compile(t) for t in (VOTE_TEMPLATE, QUOTE_TEMPLATE, INTERJECT_TEMPLATE, CONTINUE_TEMPLATE))
_OURS = re.compile(r"^debate:[^:]*:")  # any click that claims to be one of ours


def choice_label(choice: str) -> str:
    if choice == "agree":
        return "Agree with the verdict"
    if choice == "disagree":
        return "Disagree with the verdict"
    return f"Side with {choice.removeprefix('side:').upper()}"


def stored_choice(custom_choice: str) -> str:
    """custom_ids are lower case; a side is stored as `side:<LABEL>`, the seat's own label."""
    if custom_choice.startswith("side:"):
        return "side:" + custom_choice.removeprefix("side:").upper()
    return custom_choice


class VoteButton(ui.DynamicItem[ui.Button[Any]], template=VOTE_TEMPLATE):
    def __init__(self, debate_id: str, choice: str, label: str, style: discord.ButtonStyle, emoji: str | None = None):
        button: ui.Button[Any] = ui.Button(
            label=label, style=style, emoji=emoji, custom_id=f"debate:vote:{debate_id}:{choice}"
        )
        super().__init__(button)
        self.debate_id = debate_id
        self.choice = choice

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: ui.Item[Any], match: re.Match[str], /
    ) -> VoteButton:
        label = getattr(item, "label", None) or choice_label(match["choice"])
        style = getattr(item, "style", discord.ButtonStyle.secondary)
        return cls(match["id"], match["choice"], label, style)

    async def callback(self, interaction: discord.Interaction) -> None:
        interaction.client.dispatch(VOTE_EVENT, interaction, self.debate_id, self.choice)


class QuoteButton(ui.DynamicItem[ui.Button[Any]], template=QUOTE_TEMPLATE):
    def __init__(self, debate_id: str):
        button: ui.Button[Any] = ui.Button(
            label="Quote", emoji="💬", style=discord.ButtonStyle.primary, custom_id=f"debate:quote:{debate_id}"
        )
        super().__init__(button)
        self.debate_id = debate_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: ui.Item[Any], match: re.Match[str], /
    ) -> QuoteButton:
        return cls(match["id"])

    async def callback(self, interaction: discord.Interaction) -> None:
        interaction.client.dispatch(QUOTE_EVENT, interaction, self.debate_id)


class InterjectButton(ui.DynamicItem[ui.Button[Any]], template=INTERJECT_TEMPLATE):
    """On a running debate's root message: opens the form for a note to both sides' next round."""

    def __init__(self, debate_id: str):
        button: ui.Button[Any] = ui.Button(
            label="Interject", emoji="✋", style=discord.ButtonStyle.secondary,
            custom_id=f"debate:interject:{debate_id}",
        )
        super().__init__(button)
        self.debate_id = debate_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: ui.Item[Any], match: re.Match[str], /
    ) -> InterjectButton:
        return cls(match["id"])

    async def callback(self, interaction: discord.Interaction) -> None:
        interaction.client.dispatch(FORM_EVENT, interaction, "interject", self.debate_id)


class ContinueButton(ui.DynamicItem[ui.Button[Any]], template=CONTINUE_TEMPLATE):
    """On a verdict: opens the form for one more round, with optional new facts."""

    def __init__(self, debate_id: str):
        button: ui.Button[Any] = ui.Button(
            label="Continue", emoji="🔁", style=discord.ButtonStyle.secondary, custom_id=f"debate:continue:{debate_id}"
        )
        super().__init__(button)
        self.debate_id = debate_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: ui.Item[Any], match: re.Match[str], /
    ) -> ContinueButton:
        return cls(match["id"])

    async def callback(self, interaction: discord.Interaction) -> None:
        interaction.client.dispatch(FORM_EVENT, interaction, "continue", self.debate_id)


BUTTONS: tuple[type[ui.DynamicItem[Any]], ...] = (VoteButton, QuoteButton, InterjectButton, ContinueButton)


def page_button(page: str) -> ui.Button[ui.View]:
    """The debate page's link (bots/page): a link button, which Discord opens without an interaction."""
    return ui.Button(style=discord.ButtonStyle.link, label="Open the debate page", url=page)


def verdict_view(spec: DebateSpec, page: str | None = None) -> ui.View:
    """Agree / Disagree / Side with each seat / Quote / Continue: all persistent; and the page's link."""
    view = ui.View(timeout=None)
    view.add_item(VoteButton(spec.id, "agree", "Agree", discord.ButtonStyle.success, "👍"))
    view.add_item(VoteButton(spec.id, "disagree", "Disagree", discord.ButtonStyle.danger, "👎"))
    for seat in spec.seats:
        view.add_item(
            VoteButton(spec.id, f"side:{seat.label.lower()}", f"Side with {seat.label}", discord.ButtonStyle.secondary)
        )
    view.add_item(QuoteButton(spec.id))
    view.add_item(ContinueButton(spec.id))
    if page:
        view.add_item(page_button(page))
    return view


def root_view(spec: DebateSpec, page: str | None = None, *, running: bool = True) -> ui.View | None:
    """A debate's root message: the Interject button while it runs, and the page's link; None: no buttons."""
    view = ui.View(timeout=None)
    if running:
        view.add_item(InterjectButton(spec.id))
    if page:
        view.add_item(page_button(page))
    return view if view.children else None


def unanswered_click(interaction: discord.Interaction) -> bool:
    """Whether this is a click of ours (`debate:…`) that none of our buttons will answer, as discord.py's
    dispatch decides: no template matches its whole `custom_id`, or the clicked message carries no such
    component."""
    data = interaction.data if isinstance(interaction.data, dict) else {}
    custom_id = str(data.get("custom_id") or "")
    if interaction.type is not discord.InteractionType.component or not _OURS.match(custom_id):
        return False
    message = interaction.message
    if message is None or not any(t.fullmatch(custom_id) for t in _TEMPLATES):
        return True
    view_type = ui.LayoutView if message.flags.components_v2 else ui.View
    return not any(item.type.value == data.get("component_type") and getattr(item, "custom_id", None) == custom_id
                   for item in view_type.from_message(message, timeout=None).walk_children())


def debate_id_of(message: discord.Message) -> str | None:
    """The debate a verdict message belongs to, read from its buttons' custom_ids."""
    for row in message.components:
        for child in getattr(row, "children", []):
            match = _DEBATE_ID.match(getattr(child, "custom_id", None) or "")
            if match:
                return match.group(1)
    return None
