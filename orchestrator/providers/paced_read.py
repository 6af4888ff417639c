"""A streamed answer's bytes off aiohttp's reader, read no more often than the text is shown.

A model streams one SSE event a token or so, each in its own TCP segment, and aiohttp hands each one
on as it lands: the loop wakes, reads, parses the chunked body, wakes the reading task and runs the
decoder and the delta callback, once per event, tens of times a second per call. Nobody sees the text
that often: a durable stream is written once a second, a live thread is edited about as often, a
terminal's deltas go out every 50 ms (orchestrator/debate/deltas.py). So with `every_s` set, after a
read the connection's transport stops reading until `every_s` has passed since that read; what the
model sent meanwhile waits in the kernel's socket buffer and arrives in one read, as several events.

- The wait is taken before the next read, never after the body's end: once the payload has ended
  nothing is paused (the connection may go back to the pool), and `unpace()` (the provider has seen
  the final event) reads the rest as it comes.
- A pause left behind (the reader abandoned: an error event, a cancelled call) cannot stall another
  request: a paused reader has not seen the body's end, and aiohttp closes a connection released before
  its body ended rather than pooling it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any


class PacedRead:
    """aiohttp's response body as an async iterator of bytes, at most one read every `every_s` seconds."""

    __slots__ = ("_content", "_errors", "_every", "_paused_at", "_transport")

    def __init__(self, raw: Any, errors: Callable[[], AbstractContextManager[Any]], every_s: float = 0.0) -> None:
        self._content = raw.content
        self._errors = errors
        connection = raw.connection
        self._transport: asyncio.Transport | None = connection.transport if connection is not None else None
        self._every = every_s if self._transport is not None else 0.0
        self._paused_at: float | None = None

    def __aiter__(self) -> PacedRead:
        return self

    async def __anext__(self) -> bytes:
        if self._paused_at is not None:
            wait = self._paused_at + self._every - asyncio.get_running_loop().time()
            if wait > 0:
                await asyncio.sleep(wait)
            self._resume()
        with self._errors():
            chunk = await self._content.readany()
        if not chunk:
            raise StopAsyncIteration
        if self._every > 0 and not self._content.is_eof():
            self._pause()
        return chunk

    def unpace(self) -> None:
        """Read the rest as it arrives (the answer's final event is in: what follows is its tail)."""
        self._every = 0.0
        if self._paused_at is not None:
            self._paused_at = float("-inf")  # the next read goes at once

    def _pause(self) -> None:
        assert self._transport is not None
        if not self._transport.is_closing():
            self._transport.pause_reading()
            self._paused_at = asyncio.get_running_loop().time()

    def _resume(self) -> None:
        if self._paused_at is None:
            return
        self._paused_at = None
        assert self._transport is not None
        if not self._transport.is_closing():
            self._transport.resume_reading()


def unpace(chunks: object) -> None:
    """`PacedRead.unpace` for whatever `sse.body` gave (the SDK's own iterator has no pace to drop)."""
    if isinstance(chunks, PacedRead):
        chunks.unpace()
