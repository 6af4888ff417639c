"""Coalesce a model's streamed text into fewer events, and never let a secret through a stream.

SDKs deliver a delta per token (hundreds a turn); every event fans out to every sink. Platforms
show at most about one edit a second, so batching to ~20 events a second loses nothing visible.
Each batch ends at whitespace (a trailing partial word waits for the next one) and is redacted
whole: a key split across two deltas is still one word when it is checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


def _identity(text: str) -> str:
    return text


class DeltaBatcher:
    def __init__(self, emit: Callable[[str], Awaitable[None]], *, interval: float = 0.05,
                 max_chars: int = 4000, redact: Callable[[str], str] = _identity) -> None:
        self._emit = emit
        self._interval = interval
        self._max_chars = max_chars
        self._redact = redact
        self._pending = ""
        self._last: float | None = None  # loop time of the last emitted batch

    async def add(self, delta: str) -> None:
        self._pending += delta
        now = asyncio.get_running_loop().time()
        if self._last is None or now - self._last >= self._interval or len(self._pending) >= self._max_chars:
            await self._send(final=False, now=now)

    async def flush(self) -> None:
        """Emit everything held back; call once when the stream has ended."""
        await self._send(final=True, now=asyncio.get_running_loop().time())

    async def _send(self, *, final: bool, now: float) -> None:
        cut = len(self._pending) if final else _last_break(self._pending)
        if cut == 0 and len(self._pending) < self._max_chars:
            return
        cut = cut or len(self._pending)  # one enormous "word": emit it rather than hold it forever
        text, self._pending = self._pending[:cut], self._pending[cut:]
        self._last = now
        await self._emit(self._redact(text))


def _last_break(text: str) -> int:
    """Index just past the last whitespace character, or 0 when there is none."""
    for index in range(len(text) - 1, -1, -1):
        if text[index].isspace():
            return index + 1
    return 0
