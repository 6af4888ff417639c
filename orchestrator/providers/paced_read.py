"""A streamed answer's bytes off aiohttp's reader, read no more often than the text is shown.

A model streams an SSE event a token or so, and aiohttp hands each one on as it lands: a wake-up, a read,
a parse and a callback per event, tens of times a second per call, while nobody sees the text that often
(a durable stream is written once a second, a terminal's deltas every 50 ms). So with `every_s` set, a read
asked for sooner than `every_s` after the last one pauses the transport for the rest of that time; what the
model sent meanwhile waits in the socket buffer and arrives in one read.

- Only while the loop keeps time: a busy loop's reads already bring many events, and a wait there only
  makes answers later. When the running mean of how late the waits wake (`LoopLag`) passes half of
  `every_s`, the loop's streams read without waiting for QUIET_S, then try again.
- Nothing waits once the body has ended, or after `unpace()` (the provider has seen the final event); the
  transport is resumed however a wait ends (a cancelled call too).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

LAG_WEIGHT = 0.05  # of each wake-up's lateness in the loop's running mean
QUIET_S = 1.0  # once the mean passes the bar: how long the loop's streams read without waiting, then try again


class LoopLag:
    """How late one loop's paced waits wake up (a running mean over every stream read on that loop), and
    until when its streams read without waiting because that mean said the loop was busy."""

    __slots__ = ("late_s", "quiet_until")

    def __init__(self) -> None:
        self.late_s = 0.0
        self.quiet_until = float("-inf")

    def woke(self, late_s: float, now: float, every_s: float) -> None:
        self.late_s += LAG_WEIGHT * (max(late_s, 0.0) - self.late_s)
        if self.late_s > every_s / 2:  # busy: no waits for a while, then the mean starts again below the bar
            self.quiet_until = now + QUIET_S
            self.late_s = every_s / 4

    def busy(self, now: float) -> bool:
        return now < self.quiet_until


_lags: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopLag] = weakref.WeakKeyDictionary()


def loop_lag(loop: asyncio.AbstractEventLoop) -> LoopLag:
    lag = _lags.get(loop)
    if lag is None:
        lag = _lags[loop] = LoopLag()
    return lag


class PacedRead:
    """aiohttp's response body as an async iterator of bytes, at most one read every `every_s` seconds."""

    __slots__ = ("_content", "_errors", "_every", "_read_at", "_transport")

    def __init__(self, raw: Any, errors: Callable[[], AbstractContextManager[Any]], every_s: float = 0.0) -> None:
        self._content = raw.content
        self._errors = errors
        connection = raw.connection
        self._transport: asyncio.Transport | None = connection.transport if connection is not None else None
        self._every = every_s if self._transport is not None else 0.0
        self._read_at: float | None = None

    def __aiter__(self) -> PacedRead:
        return self

    async def __anext__(self) -> bytes:
        if self._every > 0 and self._read_at is not None:
            await self._wait()
        with self._errors():
            chunk = await self._content.readany()
        if not chunk:
            raise StopAsyncIteration
        self._read_at = asyncio.get_running_loop().time()
        return chunk

    def unpace(self) -> None:
        """Read the rest as it arrives (the answer's final event is in: what follows is its tail)."""
        self._every = 0.0

    async def _wait(self) -> None:
        """The rest of `every_s` since the last read, the transport paused meanwhile; nothing when that
        time has passed already, when the body has ended, or when the loop is too busy to keep time."""
        assert self._read_at is not None and self._transport is not None
        loop = asyncio.get_running_loop()
        now, due = loop.time(), self._read_at + self._every
        lag = loop_lag(loop)
        if due <= now or self._content.is_eof() or self._transport.is_closing() or lag.busy(now):
            return
        self._transport.pause_reading()
        try:
            await asyncio.sleep(due - now)
        finally:
            self._transport.resume_reading()
        woke = loop.time()
        lag.woke(woke - due, woke, self._every)


def unpace(chunks: object) -> None:
    """`PacedRead.unpace` for whatever `sse.body` gave (the SDK's own iterator has no pace to drop)."""
    if isinstance(chunks, PacedRead):
        chunks.unpace()
