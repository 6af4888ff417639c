"""Which front renders a debate's thread, on both log backends: one front at a time holds each
debate's lease; it renews its own, takes free or run-out ones, never one another front holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from orchestrator.log import DebateLog
from orchestrator.models import DebateSpec, Seat
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:a"), Seat(label="B", role="challenger", model="anthropic:b"))


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        for n in range(3):
            await s.create_debate(DebateSpec(id=f"lease{n:04d}", topic="t", seats=SEATS, judge="openai:j",
                                             platform="slack", channel="C1"))
        yield s


async def test_one_front_holds_a_thread_until_its_lease_runs_out_or_it_lets_go(store: DebateLog) -> None:
    ids = ["lease0000", "lease0001", "lease0002"]
    assert await store.claim_threads("front:a", ids[:2], 60) == ids[:2]
    assert await store.claim_threads("front:b", ids, 60) == ["lease0002"]  # a's two are held
    assert await store.claim_threads("front:a", ids, 60) == ids[:2]  # renewing its own; b's stays b's
    assert await store.claim_threads("front:a", ["nosuch00"], 60) == []

    await store.release_threads("front:a", ["lease0001"])
    assert await store.claim_threads("front:b", ids, 60) == ["lease0001", "lease0002"]

    # a lease that ran out (its front died and stopped renewing) is taken by the next front that asks
    assert await store.claim_threads("front:c", ["lease0000"], 0.05) == []
    assert await store.claim_threads("front:a", ["lease0000"], 0.05) == ["lease0000"]
    await asyncio.sleep(0.1)  # the lease's length is what is under test: it must pass
    assert await store.claim_threads("front:c", ["lease0000"], 60) == ["lease0000"]
    assert await store.claim_threads("front:a", ["lease0000"], 60) == []


async def test_two_fronts_claiming_at_once_never_both_hold_a_thread(store: DebateLog, log_backend: LogBackend) -> None:
    ids = ["lease0000", "lease0001", "lease0002"]
    async with log_backend.open() as other:
        first, second = await asyncio.gather(store.claim_threads("front:a", ids, 60),
                                             other.claim_threads("front:b", ids, 60))
    assert sorted(first + second) == ids
    assert not set(first) & set(second)
