"""What test_front_leases.py shares with other test modules, moved here so that no test module imports another:
`until`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def until(predicate: Callable[[], Awaitable[object]], within: float = 30.0) -> None:
    """Poll what other tasks (or a lease running out) change; there is no event to await."""
    deadline = time.monotonic() + within
    while not await predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)
