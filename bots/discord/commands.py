"""The commands that start and stop debates, in a cog that is handed the core: `/debate` with typed
options, `/debate-stop`, and the answers to the verdict's vote buttons (recall and quotes: recall.py).

Typed options go through `bots.commands.start_request` and `chat_spec`, so Discord, Slack and the CLI
check a request by the same rules, and chat debates are held to the operator's `ChatPolicy`. Every
read of the log passes `access.scope_of(interaction)` (this guild's public channels, and the channel asked
from), and stopping and quoting go through `access.may_stop` and `access.quote_target`. Every failure,
from a command, the menu or a button, becomes one ephemeral message in `replies.report`.
"""

from __future__ import annotations

import logging
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from bots.commands import CommandError, StartDebate, chat_spec, start_request
from bots.discord.access import is_private, may_stop, scope_of, start_channel
from bots.discord.buttons import choice_label, root_view, stored_choice
from bots.discord.output import DiscordOutput
from bots.discord.render import root_embed, thread_name, with_tally
from bots.discord.replies import reply_privately, report
from bots.discord.surface import NO_MENTIONS
from bots.thread import ROOT, ThreadSink, verdict_key
from orchestrator.app import Core
from orchestrator.log import MIN_ID_PREFIX, DebateNotFoundError, DebateRecord
from orchestrator.models import MAX_ROUNDS, MAX_TOPIC_CHARS, MIN_ROUNDS, Vote
from orchestrator.policy import ChatPolicy

PLATFORM = "discord"
NOT_A_FRONT = "This bot process takes no debates (it is not a front); see README, Restarts and deploys."

log = logging.getLogger(__name__)


def model_choices(core: Core, current: str) -> list[app_commands.Choice[str]]:
    """Suggest the models chat users may pick; anything typed as provider:model is checked on start."""
    candidates = ChatPolicy(core.settings, core.registry).offered()
    if current and ":" in current:
        candidates.insert(0, current)
    matches = [m for m in dict.fromkeys(candidates) if current.lower() in m.lower()]
    return [app_commands.Choice(name=m[:100], value=m[:100]) for m in matches[:25]]


class DebateCog(commands.Cog, name="Debates"):
    """Starting and stopping debates, and votes on verdicts; holds the core and the bot's output."""

    def __init__(self, bot: commands.Bot, core: Core, output: DiscordOutput) -> None:
        self.bot = bot
        self.core = core
        self.output = output

    async def cog_app_command_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError
                                    ) -> None:
        await report(interaction, error)

    # ---- starting and stopping

    async def _models(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return model_choices(self.core, current)

    @app_commands.command(name="debate")
    @app_commands.guild_only()
    @app_commands.describe(
        topic="The question to debate, e.g. “Should we move the ingest service to Rust?”",
        format="challenge: pro vs con · consensus: agreement · stances: anonymous positions · council: ranked",
        rounds=f"How many rounds ({MIN_ROUNDS}–{MAX_ROUNDS}); the default comes from the bot's settings",
        proposer="Model for the proposer, as provider:model",
        challenger="Model for the challenger, as provider:model",
        judge="Model that judges the debate, as provider:model",
        effort="How hard the models think: low, medium, high or max",
    )
    @app_commands.autocomplete(proposer=_models, challenger=_models, judge=_models)
    async def debate(
        self,
        interaction: discord.Interaction,
        topic: app_commands.Range[str, 1, MAX_TOPIC_CHARS],
        format: Literal["challenge", "consensus", "stances", "council"] | None = None,
        rounds: app_commands.Range[int, MIN_ROUNDS, MAX_ROUNDS] | None = None,
        proposer: str | None = None,
        challenger: str | None = None,
        judge: str | None = None,
        effort: Literal["low", "medium", "high", "max"] | None = None,
    ) -> None:
        """Start a debate between two AI models in a new thread; a judge gives a verdict you can vote on."""
        command = start_request(topic, format=format, rounds=rounds, proposer=proposer, challenger=challenger,
                                judge=judge, effort=effort)
        await self.start_debate(interaction, command)

    async def start_debate(self, interaction: discord.Interaction, command: StartDebate) -> str | None:
        """Answer at once with the debate's root message, open a public thread on it, queue the debate;
        returns its id, or None when this request started nothing new.

        The interaction's id keys the request: the log claims it once (a gateway that delivers the same
        interaction again, after a restart too, starts nothing), and the debate is enqueued under it, so
        if another debate holds it nothing new starts and what was posted for this one is taken back."""
        channel = start_channel(interaction)
        feed, tailer = self.core.feed, self.output.tailer
        if feed is None or tailer is None:
            raise CommandError(NOT_A_FRONT)
        request = f"discord:{interaction.id}"
        if not await self.core.store.claim_request(request):
            log.info("discord: dropped interaction %s, delivered again", interaction.id)
            return None
        spec, notes = await chat_spec(command, self.core, platform=PLATFORM, channel=str(interaction.channel_id),
                                      requested_by=str(interaction.user.id), workspace=str(interaction.guild_id),
                                      channel_private=is_private(channel))
        queued, sink = False, None
        try:  # admitted: from here on, a debate that does not start must give its slot back
            response = await interaction.response.send_message(
                embed=root_embed(spec, status="⏳ Starting…", notes=notes), view=root_view(spec),
                allowed_mentions=NO_MENTIONS,
            )
            message = response.resource
            if not isinstance(message, discord.InteractionMessage):
                raise CommandError("Discord did not return the message to start the thread on; please try again.")
            thread = await self.output.open_thread(message, thread_name(spec.topic))
            spec = spec.model_copy(update={"thread": str(thread.id)})
            await self.core.store.create_debate(spec)  # the thread, in the log before a worker or restart needs it
            root = channel.get_partial_message(message.id)
            sink = await self.output.open_sink(spec, thread, root, notes)
            holder = await feed.enqueue(spec, request)
            queued = True
            if holder != spec.id:
                await self._withdraw(sink, spec.id, holder, message, thread)
                return None
            tailer.follow(spec.id, sink)
            return spec.id
        except BaseException as exc:
            if not queued:
                if sink is not None:
                    await sink.aclose()
                await self.core.abandon(spec.id, f"it could not start: {str(exc) or type(exc).__name__}")
            raise

    async def _withdraw(self, sink: ThreadSink, debate_id: str, holder: str, message: discord.Message,
                        thread: discord.Thread) -> None:
        """The request started debate `holder` already: take back the thread, root and slot of `debate_id`."""
        log.info("discord: the request already holds debate %s; %s withdrawn", holder, debate_id)
        await sink.aclose()
        for posted in (thread, message):
            try:
                await posted.delete()
            except discord.HTTPException as exc:
                log.info("discord: %s of withdrawn debate %s stays: %s", type(posted).__name__, debate_id, exc)
        await self.core.store.set_message(debate_id, ROOT, PLATFORM, str(message.channel.id), str(message.id),
                                          final=True)  # nothing to resume
        await self.core.abandon(debate_id, f"a repeat of the request that started debate {holder}")

    @app_commands.command(name="debate-stop")
    @app_commands.guild_only()
    @app_commands.describe(debate_id="The debate's id (or its first few characters), shown under the debate")
    async def debate_stop(self, interaction: discord.Interaction, debate_id: str) -> None:
        """Stop a running debate: one you started, or any in this channel with Manage Messages."""
        key = debate_id.strip().lower()
        if len(key) < MIN_ID_PREFIX:
            raise CommandError(f"Give the debate's id, or at least its first {MIN_ID_PREFIX} characters.")
        record = await self.core.store.get_debate(key, scope_of(interaction), turns=False)
        if record is None or record.status != "running":  # the log says: the debate may run in any worker
            raise CommandError(f"No running debate matches `{key}` here.")
        tailer = self.output.tailer
        if tailer is None:
            raise CommandError(NOT_A_FRONT)
        if not may_stop(interaction, record):
            raise CommandError(f"Only the person who started debate `{record.id}` can stop it, or a member with "
                               "Manage Messages, from the debate's channel or thread.")
        await tailer.stop(record.id)
        await reply_privately(interaction, f"Stopping debate `{record.id}`…")

    # ---- votes

    @commands.Cog.listener()
    async def on_debate_vote(self, interaction: discord.Interaction, debate_id: str, choice: str) -> None:
        """A click on a verdict's vote button (`buttons.VoteButton`): record it, show the new tally."""
        try:
            await self._vote(interaction, debate_id, choice)
        except Exception as exc:
            await report(interaction, exc)

    async def _vote(self, interaction: discord.Interaction, debate_id: str, choice: str) -> None:
        vote = Vote(debate_id=debate_id, user=str(interaction.user.id), choice=stored_choice(choice),
                    platform=PLATFORM)
        scope = scope_of(interaction)
        try:
            tally = await self.core.store.record_vote(vote, scope)
        except DebateNotFoundError:
            raise CommandError("You cannot vote on that debate from here.") from None
        message = interaction.message
        if message is not None and message.embeds:
            record = await self.core.store.get_debate(debate_id, scope, turns=False)
            labels = tuple(seat.label for seat in record.seats) if record else ()
            winner = None if record is None else await self._winner_shown(record, str(message.id))
            embed = with_tally(message.embeds[0], tally, labels, winner)
            # the verdict's other embed (the judge's points, when long) stays as it is
            await interaction.response.edit_message(embeds=[embed, *message.embeds[1:]], allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.defer()
        await interaction.followup.send(f"Your vote: **{choice_label(choice)}**. Click another button to change it.",
                                        ephemeral=True, allowed_mentions=NO_MENTIONS)

    async def _winner_shown(self, record: DebateRecord, message_id: str) -> str | None:
        """The winner of the verdict `message_id` shows: a continued debate has one message per verdict."""
        verdicts = record.verdicts or ((record.verdict,) if record.verdict else ())
        messages = await self.core.store.messages(record.id)
        for number, verdict in enumerate(verdicts, 1):
            posted = messages.get(verdict_key(number))
            if posted is not None and posted.message_id == message_id:
                return verdict.winner
        return record.verdict.winner if record.verdict else None
