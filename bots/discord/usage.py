"""`/debate-usage`: a guild admin (Administrator or Manage Server) sees the guild's model spend this day
and month against its budgets, anyone else their own (bots/usage.py); the answer is ephemeral."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bots.discord.replies import report
from bots.discord.surface import NO_MENTIONS
from bots.usage import usage_lines
from orchestrator.app import Core

PLATFORM = "discord"


def is_guild_admin(interaction: discord.Interaction) -> bool:
    permissions = interaction.permissions
    return interaction.guild_id is not None and (permissions.administrator or permissions.manage_guild)


class UsageCog(commands.Cog, name="Usage"):
    """What the bot's model calls cost, against the operator's spend budgets."""

    def __init__(self, bot: commands.Bot, core: Core) -> None:
        self.bot = bot
        self.core = core

    async def cog_app_command_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError
                                    ) -> None:
        await report(interaction, error)

    @app_commands.command(name="debate-usage")
    @app_commands.guild_only()
    async def debate_usage(self, interaction: discord.Interaction) -> None:
        """See what debates have spent today and this month: your own, or the server's if you are an admin."""
        admin = is_guild_admin(interaction)
        workspace = str(interaction.guild_id) if interaction.guild_id is not None else None
        lines = await usage_lines(self.core, PLATFORM, workspace, str(interaction.user.id), admin=admin,
                                  place="server")
        title = "This server's model spend" if admin else "Your model spend"
        embed = discord.Embed(title=title, description="\n".join(f"• {line}" for line in lines))
        await interaction.response.send_message(embed=embed, ephemeral=True, allowed_mentions=NO_MENTIONS)
