"""The commands that start and stop debates, in a cog that is handed the core: `/debate` with typed
options, `/debate-stop`, and the answers to the verdict's vote buttons (recall and quotes: recall.py).

Typed options go through `bots.commands.start_request` and `bots.thread.start`, so Discord, Slack and the CLI
check a request by the same rules, and chat debates are held to the operator's `ChatPolicy`. Every
read of the log passes `access.scope_of(interaction)` (this guild's public channels, and the channel asked
from), and stopping and quoting go through `access.may_stop` and `access.quote_target`. Every failure,
from a command, the menu or a button, becomes one ephemeral message in `replies.report`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from bots.commands import (
    OPERATOR_ONLY,
    CommandError,
    StartDebate,
    context_links,
    named_subcommand,
    start_request,
    subcommand_refusal,
)
from bots.discord.access import is_private, may_stop, scope_of, start_channel
from bots.discord.brief import attachment_material
from bots.discord.buttons import choice_label, stored_choice
from bots.discord.output import DiscordOutput
from bots.discord.render import thread_name
from bots.discord.replies import reply_privately, report
from bots.discord.surface import NO_MENTIONS, PLATFORM, DiscordThread, voted
from bots.thread import Running
from bots.thread.start import Origin, PostedRoot, start_in_thread
from bots.thread.tail import stop_answer
from bots.thread.vote import cast_vote
from orchestrator.app import NOT_A_FRONT, Core
from orchestrator.brief.gather import Material
from orchestrator.log import MIN_ID_PREFIX
from orchestrator.log.audit import Actor
from orchestrator.models import MAX_ROUNDS, MAX_TOPIC_CHARS, MIN_ROUNDS, DebateSpec
from orchestrator.policy import ChatPolicy

log = logging.getLogger(__name__)


def model_choices(core: Core, current: str) -> list[app_commands.Choice[str]]:
    """Suggest the models chat users may pick; anything typed as provider:model is checked on start."""
    candidates = ChatPolicy(core.settings, core.registry).offered()
    if current and ":" in current:
        candidates.insert(0, current)
    matches = [m for m in dict.fromkeys(candidates) if current.lower() in m.lower()]
    return [app_commands.Choice(name=m[:100], value=m[:100]) for m in matches[:25]]


# the commands that have a `/debate-<name>` of their own here (help and models are Slack's words)
DISCORD_SUBCOMMANDS = ("history", "search", "show", "stop", "quote", "usage", "interject", "continue", "rematch",
                       "config")

class DiscordRoot:
    """Answers the interaction with a debate's root message and opens a public thread on it; deletes both."""

    def __init__(self, interaction: discord.Interaction, channel: discord.abc.Messageable,
                 output: DiscordOutput) -> None:
        self.interaction = interaction
        self.channel = channel
        self.output = output
        self.pacer = output.pacer
        self.posted: list[discord.Thread | discord.Message] = []

    async def post(self, spec: DebateSpec, notes: list[str]) -> PostedRoot:
        page = await self.output.page_of(spec.id)  # the debate page's link button (None: no DEBATE_PUBLIC_URL)
        surface = DiscordThread(self.channel, self.channel, notes=notes, page=page)  # type: ignore[arg-type]
        root = surface.root(spec, Running())
        message: discord.Message | None
        if not self.interaction.response.is_done():
            response = await self.interaction.response.send_message(**root, allowed_mentions=NO_MENTIONS)
            message = response.resource if isinstance(response.resource, discord.InteractionMessage) else None
        elif self.interaction.channel_id == self.channel.id:  # deferred while the brief was read: the answer
            message = await self.interaction.edit_original_response(**root, allowed_mentions=NO_MENTIONS)
        else:  # asked from inside a thread: the debate starts in its channel, and the answer points there
            message = await self.channel.send(**root, allowed_mentions=NO_MENTIONS)
            await self.interaction.edit_original_response(content=f"Debate started in <#{self.channel.id}>.",
                                                          allowed_mentions=NO_MENTIONS)
        if message is None:
            raise CommandError("Discord did not return the message to start the thread on; please try again.")
        self.posted.append(message)
        thread = await self.output.open_thread(message, thread_name(spec.topic))
        self.posted.insert(0, thread)
        surface = DiscordThread(thread, self.channel, notes=notes, page=page)  # type: ignore[arg-type]
        return PostedRoot(surface, str(message.id), str(thread.id))

    async def delete(self, posted: PostedRoot) -> None:
        for message in self.posted:  # the thread first, then its root
            try:
                await message.delete()
            except discord.HTTPException as exc:
                log.info("discord: %s of a withdrawn debate stays: %s", type(message).__name__, exc)


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
        judges="A jury in place of one judge: 2–5 models, comma-separated provider:model",
        effort="How hard the models think: low, medium, high or max",
        context="A file (.md, .txt, .pdf, .html) every debater and the judge read as the debate's brief",
        context_url="An http(s) link every debater and the judge read as the debate's brief",
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
        judges: str | None = None,
        context: discord.Attachment | None = None,
        context_url: str | None = None,
    ) -> None:
        """Start a debate between two AI models in a new thread; a judge gives a verdict you can vote on."""
        named = named_subcommand(topic)  # `usage`, `link`…: the command's own answer, never a paid debate
        if named is not None and (named in DISCORD_SUBCOMMANDS or named in OPERATOR_ONLY):
            raise subcommand_refusal(named, {n: f"/debate-{n}" for n in DISCORD_SUBCOMMANDS})
        command = start_request(topic, format=format, rounds=rounds, proposer=proposer, challenger=challenger,
                                judge=judge, effort=effort, judges=judges)
        if context_url:
            command = command.model_copy(update={"context": context_links([context_url])})
        materials = [await attachment_material(context)] if context is not None else []
        await self.start_debate(interaction, command, materials)

    async def start_debate(self, interaction: discord.Interaction, command: StartDebate,
                           materials: Sequence[Material] = (), channel: discord.TextChannel | None = None
                           ) -> str | None:
        """Answer at once with the debate's root message, open a public thread on it, queue the debate;
        returns its id, or None when this request started nothing new.

        The interaction's id keys the request: the log claims it once (a gateway that delivers the same
        interaction again, after a restart too, starts nothing), and the debate is enqueued under it, so
        if another debate holds it nothing new starts and what was posted for this one is taken back
        (the steps and their undo: `bots.thread.start`). With a brief to read (`materials`, `command.context`)
        the interaction is deferred first: a link or a PDF can take longer than Discord's 3 s to answer.
        `channel`: where the debate starts when not the interaction's (Debate this on a thread's message)."""
        channel = channel or start_channel(interaction)
        request = f"discord:{interaction.id}"
        if not await self.core.claim_request(request):
            log.info("discord: dropped interaction %s, delivered again", interaction.id)
            return None
        if (materials or command.context) and not interaction.response.is_done():
            await interaction.response.defer(thinking=True)
        origin = Origin(platform=PLATFORM, channel=str(channel.id), user=str(interaction.user.id),
                        workspace=str(interaction.guild_id), channel_private=is_private(channel), request_key=request)
        started = await start_in_thread(self.core, self.output.tailer, command, origin,
                                        DiscordRoot(interaction, channel, self.output), materials)
        if started is None:
            return None
        self.output.track(started.sink)
        return started.spec.id

    @app_commands.command(name="debate-stop")
    @app_commands.guild_only()
    @app_commands.describe(debate_id="The debate's id (or its first few characters), shown under the debate")
    async def debate_stop(self, interaction: discord.Interaction, debate_id: str) -> None:
        """Stop a running debate: one you started, or any in this channel with Manage Messages."""
        key = debate_id.strip().lower()
        if len(key) < MIN_ID_PREFIX:
            raise CommandError(f"Give the debate's id, or at least its first {MIN_ID_PREFIX} characters.")
        record = await self.core.debate(key, scope_of(interaction), turns=False)
        if record is None or record.status != "running":  # the log says: the debate may run in any worker
            raise CommandError(f"No running debate matches `{key}` here.")
        tailer = self.output.tailer
        if tailer is None:
            raise CommandError(NOT_A_FRONT)
        if not may_stop(interaction, record):
            raise CommandError(f"Only the person who started debate `{record.id}` can stop it, or a member with "
                               "Manage Messages, from the debate's channel or thread.")
        outcome = await tailer.stop(record.id)
        await self.core.stopped_by(record, Actor(platform="discord", workspace=str(interaction.guild_id),
                                                 user=str(interaction.user.id)))
        await reply_privately(interaction, stop_answer(record.id, outcome))

    # ---- votes

    @commands.Cog.listener()
    async def on_debate_vote(self, interaction: discord.Interaction, debate_id: str, choice: str) -> None:
        """A click on a verdict's vote button (`buttons.VoteButton`): record it, show the new tally."""
        try:
            await self._vote(interaction, debate_id, choice)
        except Exception as exc:
            await report(interaction, exc)

    async def _vote(self, interaction: discord.Interaction, debate_id: str, choice: str) -> None:
        message = interaction.message
        shown = await cast_vote(self.core, debate_id=debate_id, choice=stored_choice(choice),
                                user=str(interaction.user.id), platform=PLATFORM, scope=scope_of(interaction),
                                where=str(interaction.channel_id), message_id=str(message.id) if message else "")
        if message is not None and message.embeds:
            await interaction.response.edit_message(**voted(message.embeds, shown.spec, shown.verdict, shown.tally),
                                                    allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.defer()
        await interaction.followup.send(f"Your vote: **{choice_label(choice)}**. Click another button to change it.",
                                        ephemeral=True, allowed_mentions=NO_MENTIONS)
