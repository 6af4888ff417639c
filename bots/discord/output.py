"""What the bot writes with its own token, outside interaction replies: paced, one budget per channel.

The bot makes one `DiscordOutput` and hands it to its cog, so commands never reach for the client to
write. It holds the bot's one `Pacer` (Discord's limits are per channel, so one per bot) and builds,
each in one small method, everything that writes through it: a thread on a debate's root message, a
post into a channel (quotes), each live debate's `ThreadSink`, and (for a front: a core with a feed)
the `FrontTailer` that renders every live Discord debate's thread from the workers' event streams,
reaching a resumed debate's thread and root channel by the ids in the log (`reach`). The writing
itself lives in `bots.discord.surface` and `bots.thread`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import discord

from bots.discord.surface import PLATFORM, DiscordThread, discord_limits, open_thread, post_in_channel
from bots.thread import Feed, FrontTailer, Limits, Pacer, ThreadSink
from orchestrator.log import DebateLog, DebateRecord

THREAD_ARCHIVE_MINUTES = 1440
THREAD_CREATE_ATTEMPTS = 8  # each after discord.py's own retries: a debate must not be lost to a 429


class DiscordOutput:
    def __init__(self, client: discord.Client, store: DebateLog, limits: Limits | None = None, *,
                 feed: Feed | None = None, renderer: str | None = None,
                 owns: Callable[[str], bool] | None = None) -> None:
        """`renderer`: the front's name in the thread leases; `owns(guild_id)`: the guilds of this
        process's shards, the only ones whose threads its tailer takes."""
        self.client = client
        self.store = store
        self.pacer = Pacer(limits or discord_limits())
        self.tailer = None if feed is None else FrontTailer(feed, store, PLATFORM, self.reach, renderer=renderer,
                                                            owns=owns)
        self._sinks: set[ThreadSink] = set()

    async def reach(self, record: DebateRecord) -> tuple[DiscordThread, Pacer] | None:
        """A resumed debate's thread and root channel, by the ids the log has (no REST call)."""
        if record.channel is None or record.thread is None:
            return None
        guild = int(record.workspace) if record.workspace and record.workspace.isdigit() else None
        thread = self.client.get_partial_messageable(int(record.thread), guild_id=guild)
        root = self.client.get_partial_messageable(int(record.channel), guild_id=guild)
        return DiscordThread(thread, root), self.pacer

    async def open_thread(self, message: discord.Message, name: str) -> discord.Thread:
        """A public thread on a debate's root message, first in line in the parent channel."""
        return await open_thread(self.pacer, message, attempts=THREAD_CREATE_ATTEMPTS, name=name,
                                 auto_archive_duration=THREAD_ARCHIVE_MINUTES)

    async def send(self, channel_id: int, guild_id: int | None, **message: object) -> str:
        """Post into a channel through its budget (shared with everything else written there)."""
        channel = self.client.get_partial_messageable(channel_id, guild_id=guild_id)
        return await post_in_channel(self.pacer, channel, dict(message))

    def track(self, sink: ThreadSink) -> None:
        """A debate's sink that `rendered()` waits for until it has rendered its final event."""
        self._sinks.add(sink)
        done = asyncio.ensure_future(sink.wait_closed())
        done.add_done_callback(lambda _f: self._sinks.discard(sink))

    async def rendered(self) -> None:
        """Wait until every debate's sink has rendered its final event (and landed its final root edit)."""
        while self._sinks or (self.tailer is not None and self.tailer.following):
            if self.tailer is not None:
                await self.tailer.idle()
            if self._sinks:
                await asyncio.wait([asyncio.ensure_future(s.wait_closed()) for s in list(self._sinks)])
