"""Which front renders the threads of a workspace, on both log backends: one front at a time holds each
(platform, workspace) lease; it renews its own, takes free or run-out ones, never one another front
holds; and the fronts find the live threads with their workspaces in one read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.log import DebateLog
from orchestrator.log.transfer import migrate_log
from orchestrator.models import DebateSpec, Outcome, Seat
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:a"), Seat(label="B", role="challenger", model="anthropic:b"))


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


async def test_one_front_holds_a_workspace_until_its_lease_runs_out_or_it_lets_go(store: DebateLog) -> None:
    assert await store.claim_workspaces("front:a", "slack", ["T1", "T2"], 60) == ["T1", "T2"]
    assert await store.claim_workspaces("front:b", "slack", ["T1", "T2", "T3"], 60) == ["T3"]  # a's two are held
    assert await store.claim_workspaces("front:a", "slack", ["T3", "T2", "T1"], 60) == ["T2", "T1"]  # renewing
    assert await store.claim_workspaces("front:b", "discord", ["T1", ""], 60) == ["T1", ""]  # per platform
    assert await store.claim_workspaces("front:a", "slack", [], 60) == []

    await store.release_workspaces("front:b", "slack", ["T1"])  # not b's: nothing changes
    assert await store.claim_workspaces("front:b", "slack", ["T1"], 60) == []
    await store.release_workspaces("front:a", "slack", ["T1"])
    assert await store.claim_workspaces("front:b", "slack", ["T1", "T2"], 60) == ["T1"]

    # a lease that ran out (its front died and stopped renewing) is taken by the next front that asks
    assert await store.claim_workspaces("front:a", "slack", ["T9"], 0.05) == ["T9"]
    assert await store.claim_workspaces("front:c", "slack", ["T9"], 60) == []
    await asyncio.sleep(0.2)  # the lease's length is what is under test: it must pass
    assert await store.claim_workspaces("front:c", "slack", ["T9"], 60) == ["T9"]
    assert await store.claim_workspaces("front:a", "slack", ["T9"], 60) == []


async def test_two_fronts_claiming_at_once_never_both_hold_a_workspace(store: DebateLog,
                                                                       log_backend: LogBackend) -> None:
    workspaces = [f"T{n}" for n in range(12)]
    async with log_backend.open() as other:
        for attempt in range(5):
            platform = f"p{attempt}"
            first, second = await asyncio.gather(
                store.claim_workspaces("front:a", platform, workspaces, 60),
                other.claim_workspaces("front:b", platform, list(reversed(workspaces)), 60))
            assert sorted(first + second) == sorted(workspaces)
            assert not set(first) & set(second)


async def test_the_live_threads_come_with_their_workspaces_in_one_read(store: DebateLog) -> None:
    def spec(n: int, platform: str, workspace: str | None) -> DebateSpec:
        return DebateSpec(id=f"live{n:04d}", topic="t", seats=SEATS, judge="openai:j", platform=platform,
                          channel="C1", workspace=workspace)

    await store.create_debate(spec(1, "slack", "T1"), at=1.0)
    await store.create_debate(spec(2, "slack", None), at=2.0)  # no workspace: ''
    await store.create_debate(spec(3, "slack", "T2"), at=3.0)
    await store.create_debate(spec(4, "discord", "G1"), at=4.0)
    await store.create_debate(spec(5, "slack", "T2"), at=5.0)
    for n in (3, 5):
        await store.finish_debate(f"live{n:04d}", Outcome(status="completed"))
    await store.set_message("live0003", "root", "slack", "C1", "1.1", final=True)
    await store.set_message("live0005", "root", "slack", "C1", "1.2", final=True)
    await store.set_message("live0005", "root:2", "slack", "C1", "1.2")  # a continuation still to show
    assert await store.live_threads("slack", ["root", "root:2"]) == [("live0001", "T1"), ("live0002", ""),
                                                                     ("live0005", "T2")]
    assert await store.live_threads("slack", ["root"]) == [("live0001", "T1"), ("live0002", "")]
    assert await store.live_threads("discord", ["root"]) == [("live0004", "G1")]


async def test_migrate_log_copies_no_lease(tmp_path: Path, log_backend: LogBackend) -> None:
    source = LogBackend("sqlite", str(tmp_path / "source.db"))
    async with source.open() as s:
        await s.create_debate(DebateSpec(id="copy0001", topic="t", seats=SEATS, judge="openai:j", platform="slack"))
        assert await s.claim_workspaces("front:a", "slack", ["T1"], 60) == ["T1"]
    await migrate_log(source.target, log_backend.target)
    assert log_backend.sql("select id from debates") == [("copy0001",)]
    assert log_backend.sql("select * from thread_renderers") == []
