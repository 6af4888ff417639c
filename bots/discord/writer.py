"""Writing into one Discord channel with the bot token: paced, mention-proof, and 429-tolerant.

Discord allows about 5 writes per 5 s per channel, edits included. `ChannelPacer` spaces every write
to one channel (all the turns streaming into a thread share it), so parallel turns coalesce instead of
queueing 429s. discord.py retries a 429 that carries `Via`; `with_retry` covers the rest, so no text is
lost to a rate limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import discord

from bots.discord.render import seat_colour, seat_title
from orchestrator.models import Seat

log = logging.getLogger(__name__)

NO_MENTIONS = discord.AllowedMentions.none()
CONTENT_LIMIT = 2000
EMBED_TEXT_LIMIT = 4000  # embed description is 4,096; keep room for the author line within 6,000
T = TypeVar("T")


class ChannelPacer:
    """At most `writes` writes per `per` seconds to one channel (Discord: about 5 per 5 s).

    A write's time is taken when it completes, and writes in flight count against the window, so
    requests that queue up on the way never arrive closer together than Discord allows.
    """

    def __init__(self, writes: int = 5, per: float = 5.0) -> None:
        self.writes = writes
        self.per = per
        self._times: deque[float] = deque()
        self._inflight = 0
        self._changed = asyncio.Condition()

    def _wait_needed(self, now: float) -> float:
        while self._times and now - self._times[0] >= self.per:
            self._times.popleft()
        if len(self._times) + self._inflight < self.writes:
            return 0.0
        return self.per - (now - self._times[0]) if self._times else self.per

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        async with self._changed:
            while (wait := self._wait_needed(loop.time())) > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), wait)
            self._inflight += 1
        try:
            yield
        finally:
            async with self._changed:
                self._inflight -= 1
                self._times.append(loop.time())
                self._changed.notify_all()


async def with_retry(action: Callable[[], Awaitable[T]], attempts: int = 4) -> T:
    """Run a write; on a 429 discord.py gave up on (no `Via`, or too long), wait and try again."""
    for attempt in range(attempts):
        last = attempt == attempts - 1
        try:
            return await action()
        except discord.RateLimited as exc:
            if last:
                raise
            delay = exc.retry_after
        except discord.HTTPException as exc:
            if exc.status != 429 or last:
                raise
            delay = float(exc.response.headers.get("Retry-After", 1.0))
        log.warning("Discord rate limit; retrying in %.2fs (attempt %d)", delay, attempt + 1)
        await asyncio.sleep(delay)
    raise RuntimeError("unreachable: the last attempt returns or raises")


class ChannelWriter:
    """Posts and edits plain messages in one channel, paced and without mentions."""

    def __init__(self, channel: discord.abc.Messageable, pacer: ChannelPacer) -> None:
        self.channel = channel
        self.pacer = pacer

    async def send(self, **kwargs: object) -> discord.Message:
        async with self.pacer.slot():
            return await with_retry(lambda: self.channel.send(allowed_mentions=NO_MENTIONS, **kwargs))  # type: ignore[arg-type]

    async def edit(self, message: discord.PartialMessage, **kwargs: object) -> None:
        async with self.pacer.slot():
            await with_retry(lambda: message.edit(allowed_mentions=NO_MENTIONS, **kwargs))  # type: ignore[arg-type]


class SeatWriter:
    """A `bots.live.ThreadWriter` for one seat: each message is an embed in the seat's colour."""

    limit = EMBED_TEXT_LIMIT

    def __init__(self, thread: discord.Thread, seat: Seat, pacer: ChannelPacer, min_edit_interval: float = 1.2):
        self.thread = thread
        self.seat = seat
        self.out = ChannelWriter(thread, pacer)
        self.min_edit_interval = min_edit_interval
        self._last_write: dict[str, float] = {}

    def _embed(self, text: str) -> discord.Embed:
        embed = discord.Embed(description=text, colour=seat_colour(self.seat.label))
        return embed.set_author(name=seat_title(self.seat)[:256])

    async def post(self, text: str) -> str:
        message = await self.out.send(embed=self._embed(text))
        self._last_write[str(message.id)] = asyncio.get_running_loop().time()
        return str(message.id)

    async def edit(self, message_id: str, text: str) -> None:
        """Edit, never sooner than `min_edit_interval` after this message's last write (finals included)."""
        loop = asyncio.get_running_loop()
        wait = self._last_write.get(message_id, 0.0) + self.min_edit_interval - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        await self.out.edit(self.thread.get_partial_message(int(message_id)), embed=self._embed(text))
        self._last_write[message_id] = loop.time()
