"""The bot removed from a guild (`on_guild_remove`: kicked, or the guild deleted) and added to one
(`on_guild_join`): the Discord side of orchestrator/uninstall.py. Removed: the guild's running debates are
stopped and its data purged at once or after DEBATE_UNINSTALL_GRACE_DAYS; added back within the grace: the
data stays. Both go to the audit trail. (Discord keeps no per-guild token: the bot's one token stays.)"""

from __future__ import annotations

import logging

import discord
from discord.ext import commands

from bots.discord.output import DiscordOutput
from bots.discord.surface import PLATFORM
from orchestrator.app import Core

log = logging.getLogger(__name__)


class MembershipCog(commands.Cog, name="Membership"):
    """What follows the bot leaving or joining a guild."""

    def __init__(self, core: Core, output: DiscordOutput) -> None:
        self.core = core
        self.output = output

    @commands.Cog.listener()
    async def on_guild_remove(self, guild: discord.Guild) -> None:
        tailer = self.output.tailer
        try:
            await self.core.workspace_removed(PLATFORM, str(guild.id), stop=None if tailer is None else tailer.stop,
                                              detail="the bot was removed from the server")
        except Exception:  # the daily pass does not retry this: say so loudly
            log.exception("discord: could not purge the data of guild %s the bot left", guild.id)

    @commands.Cog.listener()
    async def on_guild_join(self, guild: discord.Guild) -> None:
        try:
            await self.core.workspace_added(PLATFORM, str(guild.id))
        except Exception:
            log.warning("discord: could not record joining guild %s", guild.id, exc_info=True)
