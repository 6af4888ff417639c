"""Writing into one Discord channel with the bot token: paced, mention-proof, and 429-tolerant.

Discord allows about 5 writes per 5 s per channel, edits included. `ChannelPacer` spaces every write
to one channel, and `ChannelPacers` (owned by the bot) hands out exactly one per channel id: every
debate started in a channel, the creation of their threads, their root-message edits and quotes posted
there share the parent's pacer, and each thread (a channel too) has its own. Parallel turns coalesce
instead of queueing 429s; `LatestEdit` coalesces status edits. discord.py retries a 429 that carries
`Via`; `with_retry` covers the rest, so no text is lost to a rate limit.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import logging
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from enum import IntEnum
from typing import TypeVar

import discord

from bots.discord.render import seat_colour, seat_title
from orchestrator.models import Seat

log = logging.getLogger(__name__)

NO_MENTIONS = discord.AllowedMentions.none()
CONTENT_LIMIT = 2000
EMBED_TEXT_LIMIT = 4000  # embed description is 4,096; keep room for the author line within 6,000
T = TypeVar("T")


class Priority(IntEnum):
    """Who goes first when several writes wait for the same channel: lower values first."""

    URGENT = 0  # opening a debate's thread: nothing of that debate can happen before it
    NORMAL = 1  # turns, notices, verdicts, quotes, a debate's final status
    PROGRESS = 2  # status edits that a newer one replaces anyway


class ChannelPacer:
    """At most `writes` writes per `per` seconds to one channel (Discord: about 5 per 5 s).

    A write's time is taken when it completes, and writes in flight count against the window, so
    requests that queue up on the way never arrive closer together than Discord allows. Waiting
    writes are let through by `Priority`, then in arrival order.
    """

    def __init__(self, writes: int = 5, per: float = 5.0, *,
                 on_use: Callable[[ChannelPacer], None] | None = None) -> None:
        self.writes = writes
        self.per = per
        self._on_use = on_use  # told before every write (`ChannelPacers` keeps busy pacers alive)
        self._times: deque[float] = deque()
        self._inflight = 0
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []  # a heap: (priority, arrival, grant)
        self._arrivals = itertools.count()
        self._timer: asyncio.TimerHandle | None = None

    def _free(self, now: float) -> int:
        while self._times and now - self._times[0] >= self.per:
            self._times.popleft()
        return self.writes - len(self._times) - self._inflight

    @property
    def waiting(self) -> int:
        """Writes queued for a slot right now."""
        return sum(1 for _p, _a, grant in self._waiters if not grant.done())

    def idle(self, now: float) -> bool:
        """Nothing in flight, nothing waiting, no write in the window: a fresh pacer would behave the same."""
        return self._free(now) == self.writes and not self.waiting

    @asynccontextmanager
    async def slot(self, priority: Priority = Priority.NORMAL) -> AsyncIterator[None]:
        if self._on_use is not None:
            self._on_use(self)
        await self._acquire(priority)
        try:
            yield
        finally:
            self._inflight -= 1
            self._times.append(asyncio.get_running_loop().time())
            self._grant()

    async def _acquire(self, priority: Priority) -> None:
        loop = asyncio.get_running_loop()
        if not self.waiting and self._free(loop.time()) > 0:
            self._inflight += 1
            return
        grant: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._waiters, (priority, next(self._arrivals), grant))
        self._grant()
        try:
            await grant
        except asyncio.CancelledError:
            if grant.done() and not grant.cancelled():  # granted, then cancelled before it could write
                self._inflight -= 1
                self._grant()
            raise

    def _grant(self) -> None:
        loop = asyncio.get_running_loop()
        free = self._free(loop.time())
        while self._waiters and (self._waiters[0][2].done() or free > 0):
            _priority, _arrival, grant = heapq.heappop(self._waiters)
            if grant.done():  # its writer was cancelled while waiting
                continue
            self._inflight += 1
            free -= 1
            grant.set_result(None)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._waiters and self._times:  # full: look again when the oldest write leaves the window
            delay = self.per - (loop.time() - self._times[0])
            self._timer = loop.call_later(max(delay, 0.0), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._grant()


class ChannelPacers:
    """One `ChannelPacer` per channel id, shared by everything that writes there (a thread is a channel).

    Discord's limit is per channel, so the debates started in a channel, their threads' creation, their
    root-message edits and quotes posted there all draw on one budget. A pacer lives while anything
    holds it, and from its first use until its window is empty again; after that a fresh one behaves
    the same, so the registry does not grow with every thread ever written to.
    """

    def __init__(self, writes: int = 5, per: float = 5.0) -> None:
        self.writes = writes
        self.per = per
        self._pacers: weakref.WeakValueDictionary[int, ChannelPacer] = weakref.WeakValueDictionary()
        self._busy: dict[int, ChannelPacer] = {}  # used lately: kept even when nobody holds them

    def __call__(self, channel_id: int) -> ChannelPacer:
        now = asyncio.get_running_loop().time()
        for idle in [c for c, p in self._busy.items() if p.idle(now)]:
            del self._busy[idle]
        pacer = self._pacers.get(channel_id)
        if pacer is None:
            pacer = self._pacers[channel_id] = ChannelPacer(
                self.writes, self.per, on_use=functools.partial(self._keep, channel_id))
        return pacer

    def _keep(self, channel_id: int, pacer: ChannelPacer) -> None:
        self._busy[channel_id] = pacer

    def __len__(self) -> int:
        return len(self._pacers)


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


async def run_to_completion(write: Awaitable[T]) -> T:
    """Await a write that has started; if the caller is cancelled meanwhile, finish it first, then re-raise.

    Cancelling a task inside discord.py's `HTTPClient.request` can leave that route's rate-limit bucket
    without its wake-up (a cancel landing in `Ratelimit._refresh`, between its sleep and `_wake`): the
    next request on the route then waits in `Ratelimit.acquire` for up to 30 s. `LiveTurns.finish`
    cancels a turn's flusher, which may be mid-edit, and the turn's final edit uses the same route, so
    writes are never abandoned halfway; the caller is held for at most the one request in flight.
    """
    task = asyncio.ensure_future(write)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                continue  # cancelled again: still let the write finish; the first cancel is re-raised below
        raise


class ChannelWriter:
    """Posts and edits plain messages in one channel, paced and without mentions.

    A caller cancelled while waiting for the pacer gives up its place; once a write has started it is
    run to completion (`run_to_completion`).
    """

    def __init__(self, channel: discord.abc.Messageable, pacer: ChannelPacer) -> None:
        self.channel = channel
        self.pacer = pacer

    async def send(self, **kwargs: object) -> discord.Message:
        async with self.pacer.slot():
            return await run_to_completion(
                with_retry(lambda: self.channel.send(allowed_mentions=NO_MENTIONS, **kwargs)))  # type: ignore[arg-type]

    async def edit(self, message: discord.PartialMessage, **kwargs: object) -> None:
        async with self.pacer.slot():
            await run_to_completion(with_retry(lambda: message.edit(allowed_mentions=NO_MENTIONS, **kwargs)))  # type: ignore[arg-type]


class LatestEdit:
    """Keeps one message showing the latest state it was given, as fast as its channel's budget allows.

    `set` never waits. While an edit waits for its slot, a newer state replaces the older one, which is
    then never sent: with many debates in one channel, progress edits coalesce instead of queueing, and
    the last state set (a debate's final status) is the one that lands. `flush` waits for that.
    """

    def __init__(self, message: discord.PartialMessage, pacer: ChannelPacer, attempts: int = 8) -> None:
        self.message = message
        self.pacer = pacer
        self.attempts = attempts
        self.dropped = 0  # states replaced before they were written
        self._pending: tuple[Priority, dict[str, object]] | None = None
        self._waiting_at: Priority | None = None  # the priority the writer is queued with, if queued
        self._task: asyncio.Task[None] | None = None

    def set(self, priority: Priority = Priority.PROGRESS, **kwargs: object) -> None:
        if self._pending is not None:
            self.dropped += 1
        self._pending = (priority, kwargs)
        if self._task is not None and not self._task.done():
            if self._waiting_at is None or priority >= self._waiting_at:
                return  # the running writer picks the new state up when its slot comes
            self._task.cancel()  # queued behind less urgent work: queue again at this priority
            self._waiting_at = None
        self._task = asyncio.create_task(self._run(), name=f"discord-latest-edit-{self.message.id}")

    async def flush(self) -> None:
        """Wait until the latest state has been written (or given up on, which is logged)."""
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    def _edit(self, kwargs: dict[str, object]) -> Callable[[], Awaitable[discord.Message]]:
        return lambda: self.message.edit(allowed_mentions=NO_MENTIONS, **kwargs)  # type: ignore[arg-type]

    async def _run(self) -> None:
        while self._pending is not None:
            self._waiting_at = self._pending[0]
            try:
                async with self.pacer.slot(self._waiting_at):
                    self._waiting_at = None
                    kwargs = self._pending[1]
                    self._pending = None
                    await run_to_completion(with_retry(self._edit(kwargs), self.attempts))
            except discord.HTTPException:
                log.warning("discord: could not edit message %s", self.message.id, exc_info=True)


class SeatWriter:
    """A `bots.thread.live.ThreadWriter` for one seat: each message is an embed in the seat's colour."""

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
