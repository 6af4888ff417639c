"""The Discord bot: default intents, no mentions; the core comes in through the constructor.

`setup_hook` adds the cogs (`DebateCog`: start, stop, votes; `RecallCog`: recall and quotes;
`LoopCog`: interject, continue, rematch, channel settings, and the forms; `MembershipCog`: the bot removed
from or added to a guild), handing each the core and
the bot's `DiscordOutput`; registers the persistent buttons, which survive restarts; and, before the
gateway connects (so before any new debate), resumes the thread of every live Discord debate from the
workers' event streams (`DiscordOutput.tailer`), and from then on takes over the guilds of fronts
that are gone. With DISCORD_SHARD_COUNT set the bot is a `ShardedDebateBot`: it connects only this
process's shards (DISCORD_SHARD_IDS) and renders only their guilds' threads. `run_discord(core, stop)`
is what `debate serve` runs beside Slack in one TaskGroup. The command tree is never synced here
(Discord allows 200 creates per guild per day): `debate discord-sync` does it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import discord
import yarl
from discord.ext import commands

from bots.discord.brief import DebateThisCog
from bots.discord.buttons import BUTTONS
from bots.discord.commands import DebateCog
from bots.discord.loop import LoopCog
from bots.discord.membership import MembershipCog
from bots.discord.output import DiscordOutput
from bots.discord.recall import RecallCog
from bots.discord.surface import NO_MENTIONS, PLATFORM
from bots.discord.usage import UsageCog
from bots.page import page_link
from bots.settings import BotSettings, bot_settings
from bots.telemetry import write_trace
from bots.thread import Limits
from bots.web import Health
from orchestrator.app import Core
from orchestrator.config import ConfigError

log = logging.getLogger(__name__)


def point_discord_at(settings: BotSettings) -> None:
    """Send discord.py's REST and gateway traffic to the configured URLs (Discord, or a local peer)."""
    discord.http.Route.BASE = settings.discord_api_base_url.rstrip("/")
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.discord_gateway_url)


class DebateBot(commands.Bot):
    """One Discord bot user running debates for every guild it is in: slash commands and buttons only."""

    def __init__(self, core: Core, *, pacing: Limits | None = None, **options: Any) -> None:
        options.setdefault("intents", discord.Intents.default())  # no privileged intents needed
        options.setdefault("http_trace", write_trace(PLATFORM))  # counts every REST write (bots/telemetry.py)
        super().__init__(command_prefix=commands.when_mentioned, help_command=None, allowed_mentions=NO_MENTIONS,
                         **options)
        self.core = core
        self.output = DiscordOutput(self, core.store, pacing, feed=core.feed, renderer=core.renderer,
                                    owns=bot_settings(core.settings).owns_guild,
                                    page=lambda debate_id: page_link(core, bot_settings(core.settings), debate_id))

    async def setup_hook(self) -> None:
        """Runs once, after login and before the gateway connects: the cog, persistent buttons, slow
        imports, and the threads of live debates (resumed in the background, before any new debate)."""
        debates = DebateCog(self, self.core, self.output)
        await self.add_cog(debates)
        await self.add_cog(RecallCog(self, self.core, self.output))
        await self.add_cog(LoopCog(self, self.core, self.output, debates))
        await self.add_cog(DebateThisCog(self, debates))  # the Debate this message menu
        await self.add_cog(UsageCog(self, self.core))
        await self.add_cog(MembershipCog(self.core, self.output))
        self.add_dynamic_items(*BUTTONS)
        if self.output.tailer is not None:
            resumed = await self.output.tailer.start()
            if resumed:
                log.info("discord: resumed the threads of %d live debate(s)", len(resumed))
        await self.core.warm_up()  # a first `/debate` must still be answered within Discord's 3 s

    @property
    def following(self) -> int:
        """Live debates whose threads this bot renders."""
        tailer = self.output.tailer
        return 0 if tailer is None else len(tailer.following)

    async def close(self) -> None:
        if self.output.tailer is not None:  # a restarted front resumes the threads
            await self.output.tailer.aclose()
        await super().close()

    async def on_message(self, message: discord.Message, /) -> None:
        """Messages are never commands here (no message content intent): nothing to process."""

    async def on_ready(self) -> None:
        log.info("discord: connected as %s to %d guild(s)", self.user, len(self.guilds))

    def gateway_up(self) -> bool:
        """For /healthz: ready and connected now (is_ready() stays true while the gateway reconnects)."""
        return self.is_ready() and not self.is_closed() and self.ws is not None and self.ws.open


class ShardedDebateBot(DebateBot, commands.AutoShardedBot):
    """The bot on this process's shards only (DISCORD_SHARD_IDS of DISCORD_SHARD_COUNT): one gateway
    connection per shard; its tailer renders only the threads of those shards' guilds."""

    def __init__(self, core: Core, *, pacing: Limits | None = None, **options: Any) -> None:
        settings = bot_settings(core.settings)
        options.setdefault("shard_count", settings.discord_shard_count)
        options.setdefault("shard_ids", settings.shard_ids or None)  # none given: every shard here
        super().__init__(core, pacing=pacing, **options)

    def gateway_up(self) -> bool:
        """Ready, and every shard of this process connected now."""
        shards = self.shards.values()
        return self.is_ready() and not self.is_closed() and bool(shards) and not any(s.is_closed() for s in shards)


def debate_bot(core: Core, *, pacing: Limits | None = None, **options: Any) -> DebateBot:
    """The bot for this process: sharded when DISCORD_SHARD_COUNT is set, one connection otherwise."""
    if bot_settings(core.settings).discord_shard_count is not None:
        return ShardedDebateBot(core, pacing=pacing, **options)
    return DebateBot(core, pacing=pacing, **options)


def bot_token(settings: BotSettings) -> str:
    if not settings.discord_bot_token:
        raise ConfigError("DISCORD_BOT_TOKEN is not set; create a bot in the Discord developer portal (see README)")
    return settings.discord_bot_token


async def run_discord(core: Core, stop: asyncio.Event, *, pacing: Limits | None = None,
                      health: Health | None = None, **options: Any) -> None:
    """Run the bot until `stop` is set (or the connection fails for good), then close it cleanly;
    `health` (the process's /healthz) reports whether the gateway is up."""
    settings = bot_settings(core.settings)
    token = bot_token(settings)
    point_discord_at(settings)
    bot = debate_bot(core, pacing=pacing, **options)
    if health is not None:
        health.watch("discord", bot.gateway_up)
        health.count(lambda: bot.following)
    async with bot:
        runner = asyncio.create_task(bot.start(token), name="discord-bot")
        stopper = asyncio.create_task(stop.wait(), name="discord-stop")
        try:
            await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            await bot.close()
            if runner.done():
                runner.result()  # a login or gateway failure surfaces to `debate serve`
            else:
                await asyncio.gather(runner, return_exceptions=True)
