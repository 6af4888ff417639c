"""Answers of a platform lookup remembered for a while, each asked once however many callers want it.

A burst of commands from one channel (a team trying the bot out at once) would otherwise miss an empty
cache together and make one lookup each: as many `conversations.info` calls as commands, against a
method Slack limits to about 50 a minute. Here the first caller's lookup runs as a task of its own, and
every caller for that key meanwhile awaits the same task; one caller giving up does not cancel it for
the others. A lookup that answers None (it failed) is not remembered: the next caller asks again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Remembered(Generic[K, V]):
    """`await remembered.get(key, lookup, ttl)`: the answer known for `key` if younger than `ttl` seconds,
    else the one `lookup()` gives (shared with every caller asking for `key` while it runs)."""

    def __init__(self) -> None:
        self._known: dict[K, tuple[V, float]] = {}
        self._asking: dict[K, asyncio.Task[V | None]] = {}

    async def get(self, key: K, lookup: Callable[[], Awaitable[V | None]], ttl: float) -> V | None:
        known = self._known.get(key)
        if known is not None and time.monotonic() - known[1] < ttl:
            return known[0]
        task = self._asking.get(key)
        if task is None:
            task = asyncio.ensure_future(self._ask(key, lookup))
            self._asking[key] = task
        return await asyncio.shield(task)

    async def _ask(self, key: K, lookup: Callable[[], Awaitable[V | None]]) -> V | None:
        try:
            value = await lookup()
            if value is not None:
                self._known[key] = (value, time.monotonic())
            return value
        finally:
            self._asking.pop(key, None)
