"""The team in the loop, in a cog that is handed the core: `/debate-interject`, `/debate-continue`,
`/debate-rematch`, `/debate-config`, and the submissions of the Interject and Continue forms.

The rules are the shared service's (`bots.loop`): which debates take a note or go on, what a rematch
replays, what a channel setting may be. Here is only what is Discord's: who asks (the member's display
name, the `Scope` of the channel asked from), who may change a channel's settings (`access.may_configure`,
the moderators who may stop anyone's debate), a rematch started through `/debate`'s own start path and
announced in the original debate's thread, and the forms (`forms.py`). Answers are ephemeral; what
everyone should see goes into the threads. A redelivered interaction is claimed once in the log, so a
note is never stored twice and a continuation never asked for twice.
"""

from __future__ import annotations

import logging
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from bots.commands import CommandError
from bots.discord.access import PLATFORM, home_channel, may_configure, scope_of
from bots.discord.buttons import unanswered_click
from bots.discord.commands import DebateCog, model_choices
from bots.discord.forms import Submission, continue_form, interject_form, open_form, submitted
from bots.discord.output import DiscordOutput
from bots.discord.render import config_embed, safe
from bots.discord.replies import no_debate, reply_privately, report
from bots.discord.surface import NO_MENTIONS
from bots.grammar import CONFIG_KEYS
from bots.loop import (
    Asker,
    channel_config,
    config_text,
    interject,
    rematch_request,
    rematch_shown_beside,
    set_channel_config,
    start_continuation,
)
from orchestrator.app import NOT_A_FRONT, Core
from orchestrator.log import DebateRecord
from orchestrator.models import MAX_INTERJECTION_CHARS, MAX_ROUNDS, MIN_ROUNDS

log = logging.getLogger(__name__)

DEBATE_ID = "The debate's id (or its first few characters), shown under the debate"
MODERATORS_ONLY = ("Only members with Manage Messages can change this channel's debate settings; "
                   "`/debate-config` with no options shows them.")
EVERYTHING = "everything"
Setting = Literal["proposer", "challenger", "judge", "format", "rounds", "effort", "interjections", "everything"]


def asker_of(interaction: discord.Interaction) -> Asker:
    """The member asking, as the shared rules need them: their id, the name their notes are signed with
    (the display name this server shows), and what they may see from here."""
    return Asker(platform=PLATFORM, user=str(interaction.user.id), author=interaction.user.display_name,
                 scope=scope_of(interaction))


def noted(debate_id: str) -> str:
    return (f"Your note for debate `{debate_id}` reaches both sides and the judge at the start of the next round, "
            "and shows in its thread then.")


def continuing(debate_id: str) -> str:
    return f"Debate `{debate_id}` goes on: one more round, then a new verdict, in its thread."


class LoopCog(commands.Cog, name="Team in the loop"):
    """Notes while a debate runs, one more round after its verdict, rematches, and each channel's defaults."""

    def __init__(self, bot: commands.Bot, core: Core, output: DiscordOutput, debates: DebateCog) -> None:
        self.bot = bot
        self.core = core
        self.output = output
        self.debates = debates  # its start path starts rematches, as it starts every debate

    async def cog_app_command_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError
                                    ) -> None:
        await report(interaction, error)

    async def _claimed(self, interaction: discord.Interaction) -> bool:
        """False when this interaction was handled already (the gateway delivered it again)."""
        if await self.core.claim_request(f"discord:{interaction.id}"):
            return True
        log.info("discord: dropped interaction %s, delivered again", interaction.id)
        return False

    # ---- interject

    @app_commands.command(name="debate-interject")
    @app_commands.guild_only()
    @app_commands.describe(debate_id=DEBATE_ID,
                           text=f"What both sides should know, up to {MAX_INTERJECTION_CHARS} characters")
    async def debate_interject(self, interaction: discord.Interaction, debate_id: str,
                               text: app_commands.Range[str, 1, MAX_INTERJECTION_CHARS]) -> None:
        """Add a note to a running debate: both sides and the judge get it in the next round."""
        await self._interject(interaction, debate_id, text)

    async def _interject(self, interaction: discord.Interaction, debate_id: str, text: str) -> None:
        if not await self._claimed(interaction):
            return
        note = await interject(self.core, debate_id, text, asker_of(interaction))
        await reply_privately(interaction, noted(note.debate_id))

    # ---- continue

    @app_commands.command(name="debate-continue")
    @app_commands.guild_only()
    @app_commands.describe(debate_id=DEBATE_ID,
                           facts=f"New facts for the extra round (optional, up to {MAX_INTERJECTION_CHARS} characters)")
    async def debate_continue(self, interaction: discord.Interaction, debate_id: str,
                              facts: app_commands.Range[str, 1, MAX_INTERJECTION_CHARS] | None = None) -> None:
        """Run one more round of a finished debate, with new facts if you have any, then a new verdict."""
        await self._continue(interaction, debate_id, facts)

    async def _continue(self, interaction: discord.Interaction, debate_id: str, facts: str | None) -> None:
        tailer = self.output.tailer
        if self.core.feed is None or tailer is None:
            raise CommandError(NOT_A_FRONT)
        if not await self._claimed(interaction):
            return
        asker = asker_of(interaction)
        record = await self._find(debate_id, interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)  # the thread may still be finishing
        await start_continuation(self.core, tailer, record.id, facts, asker, f"discord:{interaction.id}")
        await reply_privately(interaction, continuing(record.id))

    async def _find(self, debate_id: str, interaction: discord.Interaction) -> DebateRecord:
        key = debate_id.strip().lower()
        record = await self.core.debate(key, scope_of(interaction), turns=False)
        if record is None:
            raise CommandError(no_debate(key))
        return record

    # ---- the forms behind the Interject and Continue buttons

    @commands.Cog.listener()
    async def on_debate_form(self, interaction: discord.Interaction, kind: str, debate_id: str) -> None:
        """A click on Interject or Continue (`buttons.py`): its form, for a debate the member may see from here."""
        try:
            record = await self.core.debate(debate_id, scope_of(interaction), turns=False)
            if record is None:
                raise CommandError(no_debate())
            await open_form(interaction, interject_form(record.id) if kind == "interject" else continue_form(record.id))
        except Exception as exc:
            await report(interaction, exc)

    @commands.Cog.listener()
    async def on_interaction(self, interaction: discord.Interaction) -> None:
        """A submitted Interject or Continue form (`forms.py`), or a click of ours that no button answers (a
        forged or unknown `debate:…` id: discord.py drops it, and Discord would say the interaction failed);
        every other interaction is someone else's."""
        form = submitted(interaction)
        if form is None and not unanswered_click(interaction):
            return
        try:
            if form is not None:
                await self._submitted(interaction, form)
            else:
                raise CommandError(no_debate())
        except Exception as exc:
            await report(interaction, exc)

    async def _submitted(self, interaction: discord.Interaction, form: Submission) -> None:
        if form.kind == "interject":
            await self._interject(interaction, form.debate_id, form.text)
        else:
            await self._continue(interaction, form.debate_id, form.text.strip() or None)

    # ---- rematch

    @app_commands.command(name="debate-rematch")
    @app_commands.guild_only()
    @app_commands.describe(
        debate_id=DEBATE_ID,
        vs="Other debaters, as provider:model,provider:model (default: the original's)",
        format="Another format (default: the original's)",
        judges="A jury in place of one judge: 2–5 models, comma-separated provider:model (default: the original's)",
    )
    async def debate_rematch(self, interaction: discord.Interaction, debate_id: str,
                             vs: app_commands.Range[str, 1, 400] | None = None,
                             format: Literal["challenge", "consensus", "stances", "council"] | None = None,
                             judges: app_commands.Range[str, 1, 400] | None = None) -> None:
        """Debate the same topic again with other models or another format, linked to the first."""
        original = await self._find(debate_id, interaction)
        request = rematch_request(original, vs=vs, format=format, judges=judges)
        new_id = await self.debates.start_debate(interaction, request)
        if new_id is not None:
            await self._link_rematch(original, new_id, interaction)

    async def _link_rematch(self, original: DebateRecord, new_id: str, interaction: discord.Interaction) -> None:
        """A short reply in the original debate's thread naming its rematch, where this bot can post there
        (a Discord debate of this server) and the rematch is at least as visible as the original
        (`rematch_shown_beside`); a failure is logged, not shown."""
        if original.platform != PLATFORM or not original.thread or original.workspace != str(interaction.guild_id):
            return
        rematch = await self.core.debate(new_id, turns=False)
        if rematch is None or not rematch_shown_beside(rematch, original):
            return
        models = " vs ".join(f"`{safe(seat.model, 80)}`" for seat in rematch.seats)
        where = f" — <#{rematch.thread}>" if rematch.thread else ""
        text = f"🔁 Rematch: debate `{new_id}` asks this again with {models} ({rematch.format}){where}."
        try:
            await self.output.send(int(original.thread), interaction.guild_id, content=text)
        except discord.HTTPException as exc:
            log.info("discord: no rematch reply in the thread of %s: %s", original.id, exc)

    # ---- channel defaults

    async def _models(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return model_choices(self.core, current)

    @app_commands.command(name="debate-config")
    @app_commands.guild_only()
    @app_commands.describe(
        proposer="Default model for the proposer, as provider:model (default: the bot's)",
        challenger="Default model for the challenger, as provider:model",
        judge="Default model for the judge, as provider:model",
        format="Default format",
        rounds=f"Default number of rounds ({MIN_ROUNDS}–{MAX_ROUNDS})",
        effort="Default effort",
        interjections="Whether people may add notes to running debates here",
        reset="Put one setting (or every one) back to the bot's default",
    )
    @app_commands.autocomplete(proposer=_models, challenger=_models, judge=_models)
    async def debate_config(
        self,
        interaction: discord.Interaction,
        proposer: app_commands.Range[str, 1, 200] | None = None,
        challenger: app_commands.Range[str, 1, 200] | None = None,
        judge: app_commands.Range[str, 1, 200] | None = None,
        format: Literal["challenge", "consensus", "stances", "council"] | None = None,
        rounds: app_commands.Range[int, MIN_ROUNDS, MAX_ROUNDS] | None = None,
        effort: Literal["low", "medium", "high", "max"] | None = None,
        interjections: Literal["on", "off"] | None = None,
        reset: Setting | None = None,
    ) -> None:
        """Show this channel's debate defaults; members with Manage Messages can change them."""
        given = {"proposer": proposer, "challenger": challenger, "judge": judge, "format": format,
                 "rounds": rounds, "effort": effort, "interjections": interjections}
        assignments = {key: str(value) for key, value in given.items() if value is not None}
        if reset is not None:
            cleared = CONFIG_KEYS if reset == EVERYTHING else (reset,)
            both = [key for key in cleared if key in assignments]
            if both:
                raise CommandError(f"Give `{both[0]}` a value or reset it, not both.")
            assignments |= {key: "default" for key in cleared}
        home = home_channel(interaction.channel)
        if home is None:
            raise CommandError("Debate settings belong to a server's text channel; ask from one.")
        workspace, channel = str(interaction.guild_id), str(home.id)
        if not assignments:
            defaults = await channel_config(self.core, PLATFORM, workspace, channel)
            embed = config_embed(config_text(defaults, self.core.settings))
        elif not may_configure(interaction):
            raise CommandError(MODERATORS_ONLY)
        else:
            defaults = await set_channel_config(self.core, PLATFORM, workspace, channel, assignments,
                                                by=str(interaction.user.id))
            embed = config_embed(config_text(defaults, self.core.settings), saved=True)
        await interaction.response.send_message(embed=embed, ephemeral=True, allowed_mentions=NO_MENTIONS)
