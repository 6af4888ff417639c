"""The Discord client: default intents, no mentions, commands and persistent buttons from setup_hook.

`run_discord(core, stop)` is what `debate serve` runs beside Slack in one TaskGroup. The command
tree is never synced here (Discord allows 200 creates per guild per day): `debate discord-sync` does it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import discord
import yarl

from bots.discord.buttons import QuoteButton, VoteButton
from bots.discord.commands import DebateTree, register_commands
from bots.discord.restart import announce_interrupted
from bots.discord.sink import Pacing, ThreadSink
from bots.discord.writer import NO_MENTIONS, ChannelPacers
from orchestrator.app import Core
from orchestrator.config import ConfigError, Settings
from orchestrator.providers.registry import preload_sdks

log = logging.getLogger(__name__)

def point_discord_at(settings: Settings) -> None:
    """Send discord.py's REST and gateway traffic to the configured URLs (Discord, or a local peer)."""
    discord.http.Route.BASE = settings.discord_api_base_url.rstrip("/")
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.discord_gateway_url)


class DebateBot(discord.Client):
    """One Discord bot user running debates for every guild it is in."""

    def __init__(self, core: Core, *, pacing: Pacing | None = None, **options: Any) -> None:
        options.setdefault("intents", discord.Intents.default())  # no privileged intents needed
        super().__init__(allowed_mentions=NO_MENTIONS, **options)
        self.core = core
        self.pacing = pacing or Pacing()
        # one pacer per channel id for every write the bot makes with its token (threads are channels)
        self.pacers = ChannelPacers(self.pacing.channel_writes, self.pacing.channel_window)
        self.tree = DebateTree(self)
        self._sinks: set[ThreadSink] = set()
        self._restart_notices: asyncio.Task[None] | None = None

    async def setup_hook(self) -> None:
        """Runs once, after login and before the gateway connects: commands, persistent buttons, slow
        imports, and (in the background) the root messages of debates a restart cut off."""
        register_commands(self.tree)
        self.add_dynamic_items(VoteButton, QuoteButton)
        if self.core.interrupted:
            self._restart_notices = asyncio.create_task(announce_interrupted(self.core, self, self.pacers),
                                                        name="discord-restart-notices")
        await preload_sdks()  # a first `/debate` must still be answered within Discord's 3 s

    async def close(self) -> None:
        if self._restart_notices is not None:
            self._restart_notices.cancel()
            await asyncio.gather(self._restart_notices, return_exceptions=True)
        await super().close()

    async def on_ready(self) -> None:
        log.info("discord: connected as %s to %d guild(s)", self.user, len(self.guilds))

    def track(self, sink: ThreadSink) -> None:
        """Keep a debate's sink alive until it has rendered its final event."""
        self._sinks.add(sink)
        done = asyncio.ensure_future(sink.wait_closed())
        done.add_done_callback(lambda _f: self._sinks.discard(sink))


def bot_token(settings: Settings) -> str:
    if not settings.discord_bot_token:
        raise ConfigError("DISCORD_BOT_TOKEN is not set; create a bot in the Discord developer portal (see README)")
    return settings.discord_bot_token


async def run_discord(core: Core, stop: asyncio.Event, *, pacing: Pacing | None = None, **options: Any) -> None:
    """Run the bot until `stop` is set (or the connection fails for good), then close it cleanly."""
    token = bot_token(core.settings)
    point_discord_at(core.settings)
    bot = DebateBot(core, pacing=pacing, **options)
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
