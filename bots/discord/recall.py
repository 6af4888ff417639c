"""Recall in Discord, in a cog that is handed the core: `/debate-history`, `-search`, `-show`, `-quote`,
the "Quote recommendation" message menu and the verdict's Quote button. Every read passes
`access.scope_of(interaction)`, and a quote goes only where `access.quote_target` allows.
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bots.commands import CommandError
from bots.discord.access import quote_target, scope_of
from bots.discord.buttons import debate_id_of
from bots.discord.output import DiscordOutput
from bots.discord.render import (
    STATUS_LABELS,
    audience_text,
    quote_embed,
    rematches_text,
    safe,
    tally_text,
    verdicts_text,
)
from bots.discord.replies import no_debate, report
from bots.discord.surface import NO_MENTIONS
from orchestrator.app import Core
from orchestrator.log import DebateRecord

PLATFORM = "discord"


def _thread_link(record: DebateRecord, guild_id: int) -> str:
    return f"https://discord.com/channels/{guild_id}/{record.thread or record.channel}"


class RecallCog(commands.Cog, name="Recall"):
    """Finding, showing and quoting past debates."""

    def __init__(self, bot: commands.Bot, core: Core, output: DiscordOutput) -> None:
        self.bot = bot
        self.core = core
        self.output = output
        # context menus cannot be defined in a class: made here, added to the tree when the cog loads
        self.quote_menu = app_commands.guild_only(
            app_commands.ContextMenu(name="Quote recommendation", callback=self.quote_recommendation))
        self.quote_menu.error(report)

    async def cog_load(self) -> None:
        self.bot.tree.add_command(self.quote_menu)

    async def cog_unload(self) -> None:
        self.bot.tree.remove_command(self.quote_menu.name, type=self.quote_menu.type)

    async def cog_app_command_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError
                                    ) -> None:
        await report(interaction, error)

    # ---- recall

    @app_commands.command(name="debate-history")
    @app_commands.guild_only()
    @app_commands.describe(limit="How many debates to list (1–25)")
    async def debate_history(self, interaction: discord.Interaction,
                             limit: app_commands.Range[int, 1, 25] = 10) -> None:
        """List the latest debates in this channel with their winners."""
        scope = scope_of(interaction)
        rows = await self.core.history(limit, scope, channel=scope.channel)
        if not rows:
            raise CommandError("No debates in this channel yet. Start one with `/debate`.")
        lines = []
        for row in rows:
            winner = (f" · winner {row.winner}" + (" (split)" if row.split else "") if row.winner else
                      " · no clear winner" if row.confidence == "none" else "")
            status = STATUS_LABELS.get(row.status, row.status)
            lines.append(f"`{row.id}` {status}{winner} · {row.votes} vote(s) — {safe(row.topic, 120)}")
        embed = discord.Embed(title="Recent debates", description=safe("\n".join(lines), 4000))
        await interaction.response.send_message(embed=embed, ephemeral=True, allowed_mentions=NO_MENTIONS)

    @app_commands.command(name="debate-search")
    @app_commands.guild_only()
    @app_commands.describe(query="Words to look for in topics, turns and recommendations")
    async def debate_search(self, interaction: discord.Interaction, query: app_commands.Range[str, 1, 200]) -> None:
        """Search this server's debates you may see: topics, turns and recommendations."""
        hits = await self.core.search(query, 10, scope_of(interaction))
        if not hits:
            raise CommandError(f"Nothing found for “{query}”.")
        lines = [f"`{h.debate_id}` **{safe(h.topic, 100)}** ({h.where})\n> {safe(h.snippet, 200)}" for h in hits]
        embed = discord.Embed(title=safe(f"Search: {query}", 256), description=safe("\n".join(lines), 4000))
        await interaction.response.send_message(embed=embed, ephemeral=True, allowed_mentions=NO_MENTIONS)

    @app_commands.command(name="debate-show")
    @app_commands.guild_only()
    @app_commands.describe(debate_id="The debate's id (or its first few characters)")
    async def debate_show(self, interaction: discord.Interaction, debate_id: str) -> None:
        """Show one debate's status, verdicts, votes and rematches."""
        record = await self.core.debate(debate_id.strip().lower(), scope_of(interaction))
        if record is None:
            raise CommandError(no_debate(debate_id))
        embed = discord.Embed(title=safe(record.topic, 256),
                              description=STATUS_LABELS.get(record.status, record.status))
        seats = "\n".join(f"{s.label} {s.role}: `{s.model}`" for s in record.seats)
        embed.add_field(name="Seats", value=safe(seats, 1024))
        embed.add_field(name="Rounds", value=f"{record.rounds_completed}/{record.rounds_planned}")
        if record.rematch_of:
            embed.add_field(name="🔁 Rematch", value=f"Rematch of `{safe(record.rematch_of, 40)}`")
        if record.verdict:
            embed.add_field(name=record.verdict.headline(),
                            value=safe(record.verdict.recommendation or "—", 1024), inline=False)
            if record.verdict.cruxes:
                embed.add_field(name="Cruxes", value=safe("\n".join(record.verdict.crux_lines()), 1024),
                                inline=False)
            if len(record.verdicts) > 1:
                embed.add_field(name=f"Verdicts ({len(record.verdicts)}, first to latest)",
                                value=verdicts_text(record), inline=False)
            votes = tally_text(record.tally, tuple(s.label for s in record.seats))
            embed.add_field(name="Votes", value=votes, inline=False)
        if record.interjections:
            embed.add_field(name="Audience", value=audience_text(record), inline=False)
        if record.rematches:
            embed.add_field(name=f"Rematches ({len(record.rematches)}), side by side with this debate",
                            value=rematches_text(record), inline=False)
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
        await self.quote(interaction, key, no_debate(key))

    async def quote_recommendation(self, interaction: discord.Interaction, message: discord.Message) -> None:
        not_verdict = "That is not a debate verdict. Use this on the verdict message, or `/debate-quote ID`."
        if self.bot.user is None or message.author.id != self.bot.user.id:
            raise CommandError(not_verdict)
        debate_id = debate_id_of(message) or await self.core.debate_of_message(
            PLATFORM, str(message.channel.id), str(message.id), scope_of(interaction))
        if debate_id is None:
            raise CommandError(not_verdict)
        await self.quote(interaction, debate_id, "That debate cannot be quoted from here.")

    async def quote(self, interaction: discord.Interaction, id_or_prefix: str, not_found: str) -> None:
        """Post a debate the asker may see into its own channel (never another guild's), linking to its
        thread; `not_found` is the whole answer when there is no such debate, so it names no other tenant's."""
        scope = scope_of(interaction)
        record = await self.core.debate(id_or_prefix, scope, turns=False)
        target = None if record is None else quote_target(record, scope)
        if record is None or target is None:
            raise CommandError(not_found)
        if record.verdict is None:
            raise CommandError(f"Debate `{record.id}` has no verdict yet, so there is nothing to quote.")
        channel_id, guild_id = target
        await interaction.response.defer(ephemeral=True, thinking=True)
        seat = record.seat(record.verdict.winner)
        winner = ("no clear winner" if record.verdict.no_clear_winner else
                  f"{seat.label} ({seat.model})" if seat else record.verdict.winner)
        embed = quote_embed(record.topic, record.verdict.recommendation, winner,
                            _thread_link(record, guild_id), interaction.user.display_name)
        await self.output.send(channel_id, guild_id, embed=embed)
        await interaction.followup.send(f"Quoted the recommendation of `{record.id}` in <#{channel_id}>.",
                                        ephemeral=True, allowed_mentions=NO_MENTIONS)

    @commands.Cog.listener()
    async def on_debate_quote(self, interaction: discord.Interaction, debate_id: str) -> None:
        """A click on a verdict's Quote button (`buttons.QuoteButton`)."""
        try:
            await self.quote(interaction, debate_id, no_debate())
        except Exception as exc:
            await report(interaction, exc)
