"""Persistent verdict buttons: votes and quotes that keep working after a restart.

Each button's `custom_id` carries the debate id and the choice (`debate:vote:{id}:{choice}`,
`debate:quote:{id}`); discord.py matches it against the `DynamicItem` templates registered in
`setup_hook`, so no view state lives in memory. Votes go to SQLite; the tally shown on the verdict
message is re-read from there on every click.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

import discord
from discord import ui

from bots.commands import CommandError
from bots.discord.render import quote_embed, with_tally
from bots.discord.writer import NO_MENTIONS, ChannelWriter
from orchestrator.log.store import DebateRecord
from orchestrator.models import DebateSpec, Vote

if TYPE_CHECKING:
    from bots.discord.client import DebateBot

log = logging.getLogger(__name__)

VOTE_TEMPLATE = r"debate:vote:(?P<id>[0-9a-f]+):(?P<choice>[a-z0-9:_-]+)"
QUOTE_TEMPLATE = r"debate:quote:(?P<id>[0-9a-f]+)"
_DEBATE_ID = re.compile(r"^debate:(?:vote|quote):([0-9a-f]+)")


def _choice_label(choice: str) -> str:
    if choice == "agree":
        return "Agree with the verdict"
    if choice == "disagree":
        return "Disagree with the verdict"
    return f"Side with {choice.removeprefix('side:').upper()}"


def _stored_choice(custom_choice: str) -> str:
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
        label = getattr(item, "label", None) or _choice_label(match["choice"])
        style = getattr(item, "style", discord.ButtonStyle.secondary)
        return cls(match["id"], match["choice"], label, style)

    async def callback(self, interaction: discord.Interaction) -> None:
        bot: DebateBot = interaction.client  # type: ignore[assignment]
        choice = _stored_choice(self.choice)
        vote = Vote(debate_id=self.debate_id, user=str(interaction.user.id), choice=choice, platform="discord")
        tally = await bot.core.store.record_vote(vote)
        message = interaction.message
        if message is not None and message.embeds:
            labels = await _seat_labels(bot, self.debate_id)
            embed = with_tally(message.embeds[0], tally, labels)
            await interaction.response.edit_message(embed=embed, allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.defer()
        await interaction.followup.send(
            f"Your vote: **{_choice_label(self.choice)}**. Click another button to change it.",
            ephemeral=True,
            allowed_mentions=NO_MENTIONS,
        )


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
        try:
            await quote_debate(interaction, self.debate_id)
        except CommandError as exc:
            await reply_privately(interaction, str(exc))


def verdict_view(spec: DebateSpec) -> ui.View:
    """Agree / Disagree / Side with each seat / Quote: all persistent."""
    view = ui.View(timeout=None)
    view.add_item(VoteButton(spec.id, "agree", "Agree", discord.ButtonStyle.success, "👍"))
    view.add_item(VoteButton(spec.id, "disagree", "Disagree", discord.ButtonStyle.danger, "👎"))
    for seat in spec.seats:
        view.add_item(
            VoteButton(spec.id, f"side:{seat.label.lower()}", f"Side with {seat.label}", discord.ButtonStyle.secondary)
        )
    view.add_item(QuoteButton(spec.id))
    return view


def debate_id_of(message: discord.Message) -> str | None:
    """The debate a verdict message belongs to, read from its buttons' custom_ids."""
    for row in message.components:
        for child in getattr(row, "children", []):
            match = _DEBATE_ID.match(getattr(child, "custom_id", None) or "")
            if match:
                return match.group(1)
    return None


async def _seat_labels(bot: DebateBot, debate_id: str) -> tuple[str, ...]:
    record = await bot.core.store.get_debate(debate_id)
    return tuple(seat.label for seat in record.seats) if record else ()


async def reply_privately(interaction: discord.Interaction, text: str) -> None:
    """One ephemeral message, whether or not the interaction was answered already."""
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
    else:
        await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)


def _thread_link(record: DebateRecord, guild_id: int | None) -> str:
    where = "@me" if guild_id is None else str(guild_id)
    return f"https://discord.com/channels/{where}/{record.thread or record.channel}"


async def quote_debate(interaction: discord.Interaction, id_or_prefix: str) -> None:
    """Post a debate's recommendation into the channel it was started from, linking to its thread."""
    bot: DebateBot = interaction.client  # type: ignore[assignment]
    record = await bot.core.store.get_debate(id_or_prefix)
    if record is None:
        raise CommandError(f"No debate `{id_or_prefix}`; `/debate-history` lists recent ones.")
    if record.verdict is None:
        raise CommandError(f"Debate `{record.id}` has no verdict yet, so there is nothing to quote.")
    if record.platform != "discord" or not record.channel:
        raise CommandError(f"Debate `{record.id}` did not run in Discord; use `/debate-show {record.id}` instead.")
    await interaction.response.defer(ephemeral=True, thinking=True)
    seat = record.seat(record.verdict.winner)
    winner = f"{seat.label} ({seat.model})" if seat else record.verdict.winner
    embed = quote_embed(
        record.topic, record.verdict.recommendation, winner, _thread_link(record, interaction.guild_id),
        interaction.user.display_name,
    )
    channel_id = int(record.channel)
    channel = bot.get_partial_messageable(channel_id, guild_id=interaction.guild_id)
    await ChannelWriter(channel, bot.pacers(channel_id)).send(embed=embed)  # shares the channel's pacer
    await interaction.followup.send(
        f"Quoted the recommendation of `{record.id}` in <#{record.channel}>.", ephemeral=True,
        allowed_mentions=NO_MENTIONS,
    )
