"""The slash commands users see: `/debate` with typed options, recall commands, a Quote context menu.

Typed options become a `bots.commands.StartDebate` and go through the shared `build_spec`, so Discord
and Slack validate exactly alike. Errors become one ephemeral message in `DebateTree.on_error`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

import discord
from discord import app_commands

from bots.commands import CommandError, StartDebate, build_spec
from bots.discord.buttons import debate_id_of, quote_debate, reply_privately
from bots.discord.render import STATUS_LABELS, root_embed, safe, tally_text, thread_name
from bots.discord.sink import ThreadSink
from bots.discord.writer import NO_MENTIONS, Priority, run_to_completion, with_retry
from orchestrator.log.store import AmbiguousIdError
from orchestrator.models import MAX_ROUNDS, MAX_TOPIC_CHARS

if TYPE_CHECKING:
    from bots.discord.client import DebateBot

log = logging.getLogger(__name__)

THREAD_ARCHIVE_MINUTES = 1440
THREAD_CREATE_ATTEMPTS = 8  # each after discord.py's own retries: a debate must not be lost to a 429


def _bot(interaction: discord.Interaction) -> DebateBot:
    return interaction.client  # type: ignore[return-value]


class DebateTree(app_commands.CommandTree):
    """The command tree, with the one place where failures become a message for the user."""

    async def on_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
        cause = error.original if isinstance(error, app_commands.CommandInvokeError) else error
        if isinstance(cause, CommandError | AmbiguousIdError):
            text = str(cause)
        elif isinstance(cause, app_commands.NoPrivateMessage):
            text = "Debates run in server channels, not in direct messages."
        elif isinstance(cause, app_commands.TransformerError | app_commands.CheckFailure):
            text = str(cause)
        else:
            log.error("discord command failed", exc_info=cause)
            text = f"Something went wrong: {type(cause).__name__}. The details are in the bot's log."
        try:
            await reply_privately(interaction, safe(text, 1900))
        except discord.HTTPException:
            log.warning("could not tell the user about an error", exc_info=True)


async def _models(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
    """Suggest the configured models; anything typed as provider:model is accepted too."""
    core = _bot(interaction).core
    registry, settings = core.registry, core.settings
    explicit = (settings.debate_proposer, settings.debate_challenger, settings.debate_judge)
    candidates: list[str] = [m for m in explicit if m]
    for provider in registry.configured():
        model = registry.default_model(provider)
        candidates.append(model if model.startswith(f"{provider}:") else f"{provider}:{model}")
    candidates += registry.configured_cli_tools()
    if current and ":" in current:
        candidates.insert(0, current)
    unique = list(dict.fromkeys(candidates))
    matches = [m for m in unique if current.lower() in m.lower()]
    return [app_commands.Choice(name=m[:100], value=m[:100]) for m in matches[:25]]


@app_commands.command(name="debate")
@app_commands.guild_only()
@app_commands.describe(
    topic="The question to debate, e.g. “Should we move the ingest service to Rust?”",
    format="challenge: proposer vs challenger · consensus: look for agreement · stances: 2–4 anonymous positions",
    rounds=f"How many rounds (1–{MAX_ROUNDS}); the default comes from the bot's settings",
    proposer="Model for the proposer, as provider:model",
    challenger="Model for the challenger, as provider:model",
    judge="Model that judges the debate, as provider:model",
    effort="How hard the models think: low, medium, high or max",
)
@app_commands.autocomplete(proposer=_models, challenger=_models, judge=_models)
async def debate(
    interaction: discord.Interaction,
    topic: app_commands.Range[str, 1, MAX_TOPIC_CHARS],
    format: Literal["challenge", "consensus", "stances"] | None = None,
    rounds: app_commands.Range[int, 1, MAX_ROUNDS] | None = None,
    proposer: str | None = None,
    challenger: str | None = None,
    judge: str | None = None,
    effort: Literal["low", "medium", "high", "max"] | None = None,
) -> None:
    """Start a debate between two AI models in a new thread; a judge gives a verdict you can vote on."""
    command = StartDebate(
        topic=topic, format=format, rounds=rounds, proposer=proposer, challenger=challenger, judge=judge, effort=effort
    )
    await start_debate(interaction, command)


async def start_debate(interaction: discord.Interaction, command: StartDebate) -> None:
    """Answer at once with the debate's root message, open a public thread on it, start the debate."""
    bot = _bot(interaction)
    core = bot.core
    if not isinstance(interaction.channel, discord.TextChannel):
        raise CommandError("Start debates in a text channel: threads cannot hold threads of their own.")
    if len(core.jobs.running()) >= core.jobs.max_concurrent:
        raise CommandError(f"{core.jobs.max_concurrent} debates are already running; try again when one finishes.")
    spec, notes = build_spec(
        command, core.settings, core.registry, platform="discord",
        channel=str(interaction.channel_id), requested_by=str(interaction.user.id),
    )
    response = await interaction.response.send_message(
        embed=root_embed(spec, status="⏳ Starting…", notes=notes), allowed_mentions=NO_MENTIONS
    )
    message = response.resource
    if not isinstance(message, discord.InteractionMessage):
        raise CommandError("Discord did not return the message to start the thread on; please try again.")
    # a write in the parent channel: it shares that channel's budget with every other debate there, and
    # goes first, since nothing of this debate can be shown before its thread exists
    async with bot.pacers(interaction.channel.id).slot(Priority.URGENT):
        thread = await run_to_completion(with_retry(
            lambda: message.create_thread(name=thread_name(spec.topic), auto_archive_duration=THREAD_ARCHIVE_MINUTES),
            THREAD_CREATE_ATTEMPTS,
        ))
    spec = spec.model_copy(update={"thread": str(thread.id)})
    root = interaction.channel.get_partial_message(message.id)
    sink = ThreadSink(store=core.store, spec=spec, thread=thread, root=root, notes=notes, pacing=bot.pacing,
                      pacers=bot.pacers)
    bot.track(sink)
    core.jobs.start(spec, [sink])
    await core.store.set_message(spec.id, "root", "discord", str(interaction.channel_id), str(message.id))


@app_commands.command(name="debate-stop")
@app_commands.guild_only()
@app_commands.describe(debate_id="The debate's id (or its first few characters), shown under the debate")
async def debate_stop(interaction: discord.Interaction, debate_id: str) -> None:
    """Stop a running debate. It ends without a verdict and stays in the log."""
    if not _bot(interaction).core.jobs.cancel(debate_id.strip().lower()):
        raise CommandError(f"No running debate matches `{debate_id}`.")
    await reply_privately(interaction, f"Stopping debate `{debate_id}`…")


@app_commands.command(name="debate-history")
@app_commands.describe(limit="How many debates to list (1–25)")
async def debate_history(interaction: discord.Interaction, limit: app_commands.Range[int, 1, 25] = 10) -> None:
    """List the latest debates in this channel with their winners."""
    core = _bot(interaction).core
    rows = await core.store.history(limit, platform="discord", channel=str(interaction.channel_id))
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
@app_commands.describe(query="Words to look for in topics, turns and recommendations")
async def debate_search(interaction: discord.Interaction, query: app_commands.Range[str, 1, 200]) -> None:
    """Search every debate the bot has logged: topics, turns and recommendations."""
    hits = await _bot(interaction).core.store.search(query, 10)
    if not hits:
        raise CommandError(f"Nothing found for “{query}”.")
    lines = [f"`{h.debate_id}` **{safe(h.topic, 100)}** ({h.where})\n> {safe(h.snippet, 200)}" for h in hits]
    embed = discord.Embed(title=safe(f"Search: {query}", 256), description=safe("\n".join(lines), 4000))
    await interaction.response.send_message(embed=embed, ephemeral=True, allowed_mentions=NO_MENTIONS)


@app_commands.command(name="debate-show")
@app_commands.describe(debate_id="The debate's id (or its first few characters)")
async def debate_show(interaction: discord.Interaction, debate_id: str) -> None:
    """Show one debate's status, verdict and votes."""
    record = await _bot(interaction).core.store.get_debate(debate_id.strip().lower())
    if record is None:
        raise CommandError(f"No debate `{debate_id}`; `/debate-history` lists recent ones.")
    embed = discord.Embed(title=safe(record.topic, 256), description=STATUS_LABELS.get(record.status, record.status))
    embed.add_field(name="Seats", value=safe("\n".join(f"{s.label} {s.role}: `{s.model}`" for s in record.seats), 1024))
    embed.add_field(name="Rounds", value=f"{record.rounds_completed}/{record.rounds_planned}")
    if record.verdict:
        embed.add_field(name=f"Winner: {record.verdict.winner}", value=safe(record.verdict.recommendation or "—", 1024),
                        inline=False)
        votes = tally_text(record.tally, tuple(s.label for s in record.seats))
        embed.add_field(name="Votes", value=votes, inline=False)
    if record.thread and record.platform == "discord":
        embed.add_field(name="Thread", value=f"<#{record.thread}>")
    embed.set_footer(text=f"Debate {record.id} · tokens {record.input_tokens:,} in / {record.output_tokens:,} out")
    await interaction.response.send_message(embed=embed, ephemeral=True, allowed_mentions=NO_MENTIONS)


@app_commands.command(name="debate-quote")
@app_commands.guild_only()
@app_commands.describe(debate_id="The debate's id (or its first few characters)")
async def debate_quote(interaction: discord.Interaction, debate_id: str) -> None:
    """Post a debate's recommendation in the channel where it started, with a link to the full thread."""
    await quote_debate(interaction, debate_id.strip().lower())


@app_commands.context_menu(name="Quote recommendation")
@app_commands.guild_only()
async def quote_recommendation(interaction: discord.Interaction, message: discord.Message) -> None:
    debate_id = debate_id_of(message)
    if debate_id is None:
        raise CommandError("That is not a debate verdict. Use this on the verdict message, or `/debate-quote ID`.")
    await quote_debate(interaction, debate_id)


COMMANDS: tuple[app_commands.Command | app_commands.ContextMenu, ...] = (  # type: ignore[type-arg]
    debate,
    debate_stop,
    debate_history,
    debate_search,
    debate_show,
    debate_quote,
    quote_recommendation,
)


def register_commands(tree: app_commands.CommandTree) -> None:
    for command in COMMANDS:
        tree.add_command(command)
