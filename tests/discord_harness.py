"""The real discord.py client connected to the loopback Discord peer, for as long as a test needs it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import discord

from bots.discord import DebateBot, point_discord_at
from orchestrator.app import Core
from orchestrator.providers.registry import preload_sdks
from tests.fakes.discord_api import TOKEN

B = TypeVar("B", bound=discord.Client)


@asynccontextmanager
async def connected(core: Core, **options: Any) -> AsyncIterator[DebateBot]:
    """Start the bot against the peer the core's settings point at; yield once it is ready."""
    point_discord_at(core.settings)
    async with running(DebateBot(core, guild_ready_timeout=0.05, **options)) as bot:
        yield bot


@asynccontextmanager
async def running(bot: B) -> AsyncIterator[B]:
    """`bot` logged in and connected (its settings already point at the peer), until the block ends."""
    # the bot's setup_hook imports the model SDKs (seconds of CPU, the first time in a process): done
    # first, the wait for ready below times the login and the gateway only, not a loaded machine's imports
    await preload_sdks()
    async with bot:
        task = asyncio.create_task(bot.start(TOKEN))
        await asyncio.wait_for(bot.wait_until_ready(), 10)
        try:
            yield bot
        finally:
            await bot.close()
            await asyncio.gather(task, return_exceptions=True)
