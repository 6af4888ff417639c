"""Coalesce a model's streamed text into fewer events: one per interval, the first at once.

SDKs deliver a delta per token (hundreds a turn); every event fans out to every sink. Platforms
show at most about one edit a second, so batching to ~20 events a second loses nothing visible.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class DeltaBatcher:
    def __init__(self, emit: Callable[[str], Awaitable[None]], *, interval: float = 0.05,
                 max_chars: int = 4000) -> None:
        self._emit = emit
        self._interval = interval
        self._max_chars = max_chars
        self._parts: list[str] = []
        self._size = 0
        self._last: float | None = None  # loop time of the last emitted batch

    async def add(self, delta: str) -> None:
        self._parts.append(delta)
        self._size += len(delta)
        now = asyncio.get_running_loop().time()
        if self._last is None or now - self._last >= self._interval or self._size >= self._max_chars:
            await self.flush(now)

    async def flush(self, now: float | None = None) -> None:
        if not self._parts:
            return
        text = "".join(self._parts)
        self._parts.clear()
        self._size = 0
        self._last = asyncio.get_running_loop().time() if now is None else now
        await self._emit(text)
