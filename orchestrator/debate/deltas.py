"""Coalesce a model's streamed text into fewer events.

SDKs deliver a delta per token (hundreds a turn); every event fans out to every sink. Platforms
show at most about one edit a second, so batching to ~20 events a second loses nothing visible.
Batches are cut anywhere: redaction is not this module's job (`DebateRun.emit` holds back the tail
that could still be a secret, whatever the batches look like).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

DELTA_INTERVAL = 0.05  # seconds between batches: about 20 events a second
# A streamed answer is read at most this often (orchestrator/providers/paced_read.py): the tokens that land
# in between come in one read, and are at most this much later than they could be. The call's end too.
READ_EVERY_S = 0.05


@dataclass(frozen=True)
class TextPace:
    """How a call's streamed text becomes TextDelta events: batched `interval` seconds apart, and with
    `tail`, what is still held when the call ends goes out as a last delta. Without it the closing event
    (which carries the whole turn, and comes next) is the only carrier of the end: a durable stream
    saves a write per turn, where a terminal that prints the deltas needs them all."""

    interval: float = DELTA_INTERVAL
    tail: bool = True
    first_words: int = 0  # the first batch waits for this many words (0: it goes with the first token)...
    first_wait: float = 0.0  # ...or until this long after the first token
    read_every: float = READ_EVERY_S  # the answer's stream read at most this often (0: as each token lands)


LIVE = TextPace()


class DeltaBatcher:
    def __init__(self, emit: Callable[[str], Awaitable[None]], *, pace: TextPace = LIVE, max_chars: int = 4000) -> None:
        self._emit = emit
        self._interval = pace.interval
        self._first_words = pace.first_words
        self._first_wait = pace.first_wait
        self._max_chars = max_chars
        self._pending = ""
        self._last: float | None = None  # loop time of the last emitted batch
        self._began: float | None = None  # loop time of the first text

    async def add(self, delta: str) -> None:
        self._pending += delta
        now = asyncio.get_running_loop().time()
        if self._began is None:
            self._began = now
        if self._last is None:
            due = (not self._first_words or len(self._pending.split()) > self._first_words  # the last may be partial
                   or now - self._began >= self._first_wait)
        else:
            due = now - self._last >= self._interval
        if due or len(self._pending) >= self._max_chars:
            await self._send(now)

    async def flush(self) -> None:
        """Emit everything held back; call once when the stream has ended."""
        await self._send(asyncio.get_running_loop().time())

    async def _send(self, now: float) -> None:
        if not self._pending:
            return
        text, self._pending = self._pending, ""
        self._last = now
        await self._emit(text)
