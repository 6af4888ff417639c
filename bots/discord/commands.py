"""The slash commands users see, in one cog that is handed the core: `/debate` with typed options, the
recall commands, the Quote context menu, and the answers to the verdict buttons' clicks.

Typed options go through `bots.commands.start_request` and `chat_spec`, so Discord, Slack and the CLI
check a request by the same rules, and chat debates are held to the operator's `ChatPolicy`. Every
read of the log passes `access.scope_of(interaction)` (this guild's public channels, and the channel asked
from), and stopping and quoting go through `access.may_stop` and `access.quote_target`. Every failure,
from a command, the menu or a button, becomes one ephemeral message in `report`.
"""

from __future__ import annotations

import logging
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from bots.commands import CommandError, StartDebate, chat_spec, start_request
from bots.discord.access import is_private, may_stop, quote_target, scope_of
from bots.discord.buttons import choice_label, debate_id_of, stored_choice
from bots.discord.output import DiscordOutput
from bots.discord.render import STATUS_LABELS, quote_embed, root_embed, safe, tally_text, thread_name, with_tally
from bots.discord.surface import NO_MENTIONS
from orchestrator.app import Core
from orchestrator.log import MIN_ID_PREFIX, AmbiguousIdError, DebateNotFoundError, DebateRecord
from orchestrator.models import MAX_ROUNDS, MAX_TOPIC_CHARS, MIN_ROUNDS, Vote
from orchestrator.policy import ChatPolicy

log = logging.getLogger(__name__)
PLATFORM = "discord"


async def reply_privately(interaction: discord.Interaction, text: str) -> None:
    """One ephemeral message, whether or not the interaction was answered already."""
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
    else:
        await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)


def _thread_link(record: DebateRecord, guild_id: int) -> str:
    return f"https://discord.com/channels/{guild_id}/{record.thread or record.channel}"


class DebateCog(commands.Cog, name="Debates"):
    """Everything users do with the bot in Discord; holds the core and the bot's output."""

    def __init__(self, bot: commands.Bot, core: Core, output: DiscordOutput) -> None:
        self.bot = bot
        self.core = core
        self.output = output
        # context menus cannot be defined in a class: made here, added to the tree when the cog loads
        self.quote_menu = app_commands.guild_only(
            app_commands.ContextMenu(name="Quote recommendation", callback=self.quote_recommendation))
        self.quote_menu.error(self.report)

    async def cog_load(self) -> None:
        self.bot.tree.add_command(self.quote_menu)

    async def cog_unload(self) -> None:
        self.bot.tree.remove_command(self.quote_menu.name, type=self.quote_menu.type)

    # ---- failures: the one place they become a message for the user

    async def cog_app_command_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError
                                    ) -> None:
        await self.report(interaction, error)

    async def report(self, interaction: discord.Interaction, error: Exception) -> None:
        cause = error.original if isinstance(error, app_commands.CommandInvokeError) else error
        if isinstance(cause, CommandError | AmbiguousIdError | app_commands.TransformerError
                      | app_commands.CheckFailure):
            text = str(cause)
        else:
            log.error("discord: %s failed", getattr(interaction.command, "name", "a button"), exc_info=cause)
            text = f"Something went wrong: {type(cause).__name__}. The details are in the bot's log."
        try:
            await reply_privately(interaction, safe(text, 1900))
        except discord.HTTPException:
            log.warning("could not tell the user about an error", exc_info=True)

    # ---- starting and stopping

    async def _models(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Suggest the models chat users may pick; anything typed as provider:model is checked on start."""
        candidates = ChatPolicy(self.core.settings, self.core.registry).offered()
        if current and ":" in current:
            candidates.insert(0, current)
        matches = [m for m in dict.fromkeys(candidates) if current.lower() in m.lower()]
        return [app_commands.Choice(name=m[:100], value=m[:100]) for m in matches[:25]]

    @app_commands.command(name="debate")
    @app_commands.guild_only()
    @app_commands.describe(
        topic="The question to debate, e.g. “Should we move the ingest service to Rust?”",
        format="challenge: proposer vs challenger · consensus: look for agreement · stances: 2–4 anonymous positions",
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
        format: Literal["challenge", "consensus", "stances"] | None = None,
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

    async def start_debate(self, interaction: discord.Interaction, command: StartDebate) -> None:
        """Answer at once with the debate's root message, open a public thread on it, start the debate."""
        if not isinstance(interaction.channel, discord.TextChannel):
            raise CommandError("Start debates in a text channel: threads cannot hold threads of their own.")
        spec, notes = await chat_spec(command, self.core, platform=PLATFORM, channel=str(interaction.channel_id),
                                      requested_by=str(interaction.user.id), workspace=str(interaction.guild_id))
        try:  # admitted: from here on, a debate that does not start must give its slot back
            response = await interaction.response.send_message(
                embed=root_embed(spec, status="⏳ Starting…", notes=notes), allowed_mentions=NO_MENTIONS
            )
            message = response.resource
            if not isinstance(message, discord.InteractionMessage):
                raise CommandError("Discord did not return the message to start the thread on; please try again.")
            thread = await self.output.open_thread(message, thread_name(spec.topic))
            spec = spec.model_copy(update={"thread": str(thread.id), "workspace": str(interaction.guild_id),
                                       "channel_private": is_private(interaction.channel)})
            root = interaction.channel.get_partial_message(message.id)
            self.core.jobs.start(spec, [await self.output.open_sink(spec, thread, root, notes)])
        except BaseException as exc:
            if not self.core.jobs.is_running(spec.id):
                await self.core.jobs.abandon(spec.id, f"it could not start: {str(exc) or type(exc).__name__}")
            raise

    @app_commands.command(name="debate-stop")
    @app_commands.guild_only()
    @app_commands.describe(debate_id="The debate's id (or its first few characters), shown under the debate")
    async def debate_stop(self, interaction: discord.Interaction, debate_id: str) -> None:
        """Stop a running debate: one you started, or any in this channel with Manage Messages."""
        key = debate_id.strip().lower()
        if len(key) < MIN_ID_PREFIX:
            raise CommandError(f"Give the debate's id, or at least its first {MIN_ID_PREFIX} characters.")
        record = await self.core.store.get_debate(key, scope_of(interaction), turns=False)
        if record is None or not self.core.jobs.is_running(record.id):
            raise CommandError(f"No running debate matches `{key}` here.")
        if not may_stop(interaction, record):
            raise CommandError(f"Only the person who started debate `{record.id}` can stop it, or a member with "
                               "Manage Messages, from the debate's channel or thread.")
        self.core.jobs.cancel(record.id)
        await reply_privately(interaction, f"Stopping debate `{record.id}`…")

    # ---- recall

    @app_commands.command(name="debate-history")
    @app_commands.guild_only()
    @app_commands.describe(limit="How many debates to list (1–25)")
    async def debate_history(self, interaction: discord.Interaction,
                             limit: app_commands.Range[int, 1, 25] = 10) -> None:
        """List the latest debates in this channel with their winners."""
        scope = scope_of(interaction)
        rows = await self.core.store.history(limit, scope, channel=scope.channel)
        if not rows:
            raise CommandError("No debates in this channel yet. Start one with `/debate`.")
        lines = []
        for row in rows:
            winner = f" · winner {row.winner}" + (" (split)" if row.split else "") if row.winner else ""
            status = STATUS_LABELS.get(row.status, row.status)
            lines.append(f"`{row.id}` {status}{winner} · {row.votes} vote(s) — {safe(row.topic, 120)}")
        embed = discord.Embed(title="Recent debates", description=safe("\n".join(lines), 4000))
        await interaction.response.send_message(embed=embed, ephemeral=True, allowed_mentions=NO_MENTIONS)

    @app_commands.command(name="debate-search")
    @app_commands.guild_only()
    @app_commands.describe(query="Words to look for in topics, turns and recommendations")
    async def debate_search(self, interaction: discord.Interaction, query: app_commands.Range[str, 1, 200]) -> None:
        """Search this server's debates you may see: topics, turns and recommendations."""
        hits = await self.core.store.search(query, 10, scope_of(interaction))
        if not hits:
            raise CommandError(f"Nothing found for “{query}”.")
        lines = [f"`{h.debate_id}` **{safe(h.topic, 100)}** ({h.where})\n> {safe(h.snippet, 200)}" for h in hits]
        embed = discord.Embed(title=safe(f"Search: {query}", 256), description=safe("\n".join(lines), 4000))
        await interaction.response.send_message(embed=embed, ephemeral=True, allowed_mentions=NO_MENTIONS)

    @app_commands.command(name="debate-show")
    @app_commands.guild_only()
    @app_commands.describe(debate_id="The debate's id (or its first few characters)")
    async def debate_show(self, interaction: discord.Interaction, debate_id: str) -> None:
        """Show one debate's status, verdict and votes."""
        record = await self.core.store.get_debate(debate_id.strip().lower(), scope_of(interaction))
        if record is None:
            raise CommandError(f"No debate `{debate_id}` here; `/debate-history` lists recent ones.")
        embed = discord.Embed(title=safe(record.topic, 256),
                              description=STATUS_LABELS.get(record.status, record.status))
        seats = "\n".join(f"{s.label} {s.role}: `{s.model}`" for s in record.seats)
        embed.add_field(name="Seats", value=safe(seats, 1024))
        embed.add_field(name="Rounds", value=f"{record.rounds_completed}/{record.rounds_planned}")
        if record.verdict:
            embed.add_field(name=f"Winner: {record.verdict.winner}",
                            value=safe(record.verdict.recommendation or "—", 1024), inline=False)
            votes = tally_text(record.tally, tuple(s.label for s in record.seats))
            embed.add_field(name="Votes", value=votes, inline=False)
        if record.thread and record.platform == PLATFORM:
            embed.add_field(name="Thread", value=f"<#{record.thread}>")
        embed.set_footer(text=f"Debate {record.id} · tokens {record.input_tokens:,} in / "
                              f"{record.output_tokens:,} out")
        await interaction.response.send_message(embed=embed, ephemeral=True, allowed_mentions=NO_MENTIONS)

    # ---- quotes and votes

    @app_commands.command(name="debate-quote")
    @app_commands.guild_only()
    @app_commands.describe(debate_id="The debate's id (or its first few characters)")
    async def debate_quote(self, interaction: discord.Interaction, debate_id: str) -> None:
        """Post a debate's recommendation in the channel where it started, with a link to the full thread."""
        key = debate_id.strip().lower()
        await self.quote(interaction, key, f"No debate `{key}` here; `/debate-history` lists recent ones.")

    async def quote_recommendation(self, interaction: discord.Interaction, message: discord.Message) -> None:
        not_verdict = "That is not a debate verdict. Use this on the verdict message, or `/debate-quote ID`."
        if self.bot.user is None or message.author.id != self.bot.user.id:
            raise CommandError(not_verdict)
        debate_id = debate_id_of(message) or await self.core.store.find_by_message(
            PLATFORM, str(message.channel.id), str(message.id), scope_of(interaction))
        if debate_id is None:
            raise CommandError(not_verdict)
        await self.quote(interaction, debate_id, "That debate cannot be quoted from here.")

    async def quote(self, interaction: discord.Interaction, id_or_prefix: str, not_found: str) -> None:
        """Post a debate the asker may see into its own channel (never another guild's), linking to its
        thread; `not_found` is the whole answer when there is no such debate, so it names no other tenant's."""
        scope = scope_of(interaction)
        record = await self.core.store.get_debate(id_or_prefix, scope, turns=False)
        target = None if record is None else quote_target(record, scope)
        if record is None or target is None:
            raise CommandError(not_found)
        if record.verdict is None:
            raise CommandError(f"Debate `{record.id}` has no verdict yet, so there is nothing to quote.")
        channel_id, guild_id = target
        await interaction.response.defer(ephemeral=True, thinking=True)
        seat = record.seat(record.verdict.winner)
        winner = f"{seat.label} ({seat.model})" if seat else record.verdict.winner
        embed = quote_embed(record.topic, record.verdict.recommendation, winner,
                            _thread_link(record, guild_id), interaction.user.display_name)
        await self.output.send(channel_id, guild_id, embed=embed)
        await interaction.followup.send(f"Quoted the recommendation of `{record.id}` in <#{channel_id}>.",
                                        ephemeral=True, allowed_mentions=NO_MENTIONS)

    @commands.Cog.listener()
    async def on_debate_quote(self, interaction: discord.Interaction, debate_id: str) -> None:
        """A click on a verdict's Quote button (`buttons.QuoteButton`)."""
        try:
            await self.quote(interaction, debate_id, "That debate cannot be quoted from here.")
        except Exception as exc:
            await self.report(interaction, exc)

    @commands.Cog.listener()
    async def on_debate_vote(self, interaction: discord.Interaction, debate_id: str, choice: str) -> None:
        """A click on a verdict's vote button (`buttons.VoteButton`): record it, show the new tally."""
        try:
            await self._vote(interaction, debate_id, choice)
        except Exception as exc:
            await self.report(interaction, exc)

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
            embed = with_tally(message.embeds[0], tally, labels)
            await interaction.response.edit_message(embed=embed, allowed_mentions=NO_MENTIONS)
        else:
            await interaction.response.defer()
        await interaction.followup.send(f"Your vote: **{choice_label(choice)}**. Click another button to change it.",
                                        ephemeral=True, allowed_mentions=NO_MENTIONS)
