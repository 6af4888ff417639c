"""The short forms (Discord modals) behind the Interject and Continue buttons, and reading what came back.

A form's `custom_id` carries what it is for and the debate id (`debate:interject-form:{id}`,
`debate:continue-form:{id}`), like the buttons'. Its submission is answered by the team cog from that id
and the raw submitted fields (`submitted`), never by the modal object: `open_form` stops the modal before
sending it, so discord.py keeps none in memory, and a form opened before a restart still works after it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import discord
from discord import ui
from pydantic import BaseModel, ConfigDict

from orchestrator.models import MAX_INTERJECTION_CHARS

FORM_TEMPLATE = re.compile(r"^debate:(?P<kind>interject|continue)-form:(?P<id>[0-9a-f]+)$")
TEXT_FIELD = "text"  # the custom_id of each form's one text input
TEXT_INPUT = 4  # component types in a submission
LABEL = 18
ACTION_ROW = 1


class Submission(BaseModel):
    """What a form's submission asks for: a note for a running debate, or one more round of a finished one."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["interject", "continue"]
    debate_id: str
    text: str


def interject_form(debate_id: str) -> ui.Modal:
    form = ui.Modal(title="Interject", custom_id=f"debate:interject-form:{debate_id}")
    form.add_item(ui.Label(
        text="Your note for both sides", description="They and the judge see it in the next round, under your name.",
        component=ui.TextInput(custom_id=TEXT_FIELD, style=discord.TextStyle.paragraph, required=True,
                               max_length=MAX_INTERJECTION_CHARS,
                               placeholder="A fact the debaters are missing, e.g. our p99 latency is 40 ms."),
    ))
    return form


def continue_form(debate_id: str) -> ui.Modal:
    form = ui.Modal(title="Continue the debate", custom_id=f"debate:continue-form:{debate_id}")
    form.add_item(ui.Label(
        text="New facts (optional)", description="One more round with these, then a new verdict.",
        component=ui.TextInput(custom_id=TEXT_FIELD, style=discord.TextStyle.paragraph, required=False,
                               max_length=MAX_INTERJECTION_CHARS,
                               placeholder="What the debaters and the judge should know now."),
    ))
    return form


async def open_form(interaction: discord.Interaction, form: ui.Modal) -> None:
    """Answer a click with `form`; its submission comes back as an interaction the team cog reads."""
    form.stop()  # a stopped modal is not kept: the submission is read from its custom_id (`submitted`)
    await interaction.response.send_modal(form)


def submitted(interaction: discord.Interaction) -> Submission | None:
    """The submission of one of our forms, or None for any other interaction."""
    if interaction.type is not discord.InteractionType.modal_submit or not isinstance(interaction.data, dict):
        return None
    match = FORM_TEMPLATE.match(str(interaction.data.get("custom_id") or ""))
    if match is None:
        return None
    text = _field(interaction.data.get("components") or [], TEXT_FIELD) or ""
    return Submission(kind=match["kind"], debate_id=match["id"], text=text)  # type: ignore[arg-type]


def _field(components: list[Any], custom_id: str) -> str | None:
    """A text input's value, whether it came in a label (type 18) or an action row (type 1)."""
    for component in components:
        if not isinstance(component, dict):
            continue
        kind = component.get("type")
        if kind == ACTION_ROW:
            found = _field(component.get("components") or [], custom_id)
        elif kind == LABEL:
            found = _field([component.get("component")], custom_id)
        elif kind == TEXT_INPUT and component.get("custom_id") == custom_id:
            found = str(component.get("value") or "")
        else:
            found = None
        if found is not None:
            return found
    return None


def text_field(data: dict[str, Any], custom_id: str) -> str | None:
    """The value of text input `custom_id` in a form submission's data (any of our forms)."""
    return _field(data.get("components") or [], custom_id)
