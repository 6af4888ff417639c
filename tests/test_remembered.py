"""bots/remembered.py: a lookup remembered for a while, asked once by callers that want it at the same time."""

from __future__ import annotations

import asyncio

import pytest

from bots.remembered import Remembered


class Lookup:
    """A lookup that answers what it is told, once released; it counts how often it was asked."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.asked = 0
        self.release = asyncio.Event()

    async def __call__(self) -> str | None:
        self.asked += 1
        await self.release.wait()
        return self.answer


async def test_callers_at_once_share_one_lookup_and_later_ones_get_it_remembered() -> None:
    remembered: Remembered[str, str] = Remembered()
    lookup = Lookup("public")
    callers = [asyncio.create_task(remembered.get("C1", lookup, 60.0)) for _ in range(5)]
    await asyncio.sleep(0)  # every caller has asked
    lookup.release.set()
    assert await asyncio.gather(*callers) == ["public"] * 5
    assert await remembered.get("C1", lookup, 60.0) == "public"
    assert lookup.asked == 1
    assert await remembered.get("C1", lookup, 0.0) == "public" and lookup.asked == 2  # expired: asked again


async def test_a_failed_lookup_is_not_remembered() -> None:
    remembered: Remembered[str, str] = Remembered()
    failing = Lookup(None)
    failing.release.set()
    assert await remembered.get("C1", failing, 60.0) is None
    assert await remembered.get("C1", failing, 60.0) is None
    assert failing.asked == 2


async def test_one_caller_giving_up_leaves_the_lookup_running_for_the_others() -> None:
    remembered: Remembered[str, str] = Remembered()
    lookup = Lookup("private")
    first = asyncio.create_task(remembered.get("G2", lookup, 60.0))
    second = asyncio.create_task(remembered.get("G2", lookup, 60.0))
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    lookup.release.set()
    assert await second == "private" and lookup.asked == 1


async def test_a_lookup_that_raises_raises_for_every_caller_and_is_asked_again_next_time() -> None:
    remembered: Remembered[str, str] = Remembered()
    calls = 0

    async def broken() -> str | None:
        nonlocal calls
        calls += 1
        raise RuntimeError("the platform said no")

    results = await asyncio.gather(remembered.get("U1", broken, 60.0), remembered.get("U1", broken, 60.0),
                                   return_exceptions=True)
    assert [type(r) for r in results] == [RuntimeError, RuntimeError] and calls == 1
    with pytest.raises(RuntimeError):
        await remembered.get("U1", broken, 60.0)
    assert calls == 2
