"""The SQLite log's write lock held by another process (issue 57, item 19): a real `sqlite3` process holds
`BEGIN IMMEDIATE` on the log file while debates run through the real engine and the loopback LLM peer.
Held for several times SQLite's busy timeout (the old limit, after which every running debate failed for
good as "disk full?"), the log waits and no debate fails; a wait that finally ends names the lock.
The limits are made small (busy timeout 200 ms) so that the test takes a second or two, not 40."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from orchestrator.debate.engine import Engine
from orchestrator.debate.jobs import DebateJobs
from orchestrator.events import DebateFailed, EventBase, TurnStarted
from orchestrator.log import Store, StoreError, writer_thread
from orchestrator.providers import ProviderRegistry
from tests.debate_harness import settings_for
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge
from tests.log_outage_harness import ONE_AT_A_TIME, chat_spec, names_the_lock

BUSY_MS = 200  # one try's busy timeout: the old limit of the whole wait, made small
HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


class LockHolder:
    """Another process holding the log's write lock from `take` until `release`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.proc: asyncio.subprocess.Process | None = None
        self.taken = asyncio.Event()
        self.asked = False

    async def take(self) -> None:
        if self.asked:
            return
        self.asked = True
        self.proc = await asyncio.create_subprocess_exec(sys.executable, "-c", HOLDER, str(self.path),
                                                         stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        assert self.proc.stdout is not None
        assert await self.proc.stdout.readline() == b"locked\n"
        self.taken.set()

    async def release(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.returncode is None:
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            await proc.stdin.drain()
            assert await proc.wait() == 0


@dataclass
class LockingPlatform:
    """Takes the lock when the first challenger's turn starts (the openings are logged by then)."""

    holder: LockHolder
    events: list[EventBase] = field(default_factory=list)

    async def handle(self, event: EventBase) -> None:
        self.events.append(event)
        if isinstance(event, TurnStarted) and event.seat == "B":
            await self.holder.take()


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(60):
        while not condition():  # noqa: ASYNC110 (another thread's counter: no event to await)
            await asyncio.sleep(0.02)


@pytest.fixture
def small_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_thread, "BUSY_TIMEOUT_MS", BUSY_MS)


@pytest.mark.usefixtures("small_busy_timeout")
@pytest.mark.slow
async def test_a_lock_held_past_the_busy_timeout_fails_no_running_debate(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    holder = LockHolder(path)
    async with FakeLLMServer() as srv, Store(path, runner="cli:test") as store:
        script_judge(srv, "A")
        srv.add_rule(Reply(text="Rebuttal: the lock is someone else's business. " * 4), match="model-b")
        settings = settings_for(srv)
        registry = ProviderRegistry(settings)
        try:
            jobs = DebateJobs(Engine(registry, settings), store)
            specs = [chat_spec(f"Should the log wait for lock {n}?").model_copy(update={"requested_by": f"U{n}"})
                     for n in range(3)]
            for spec in specs:
                await jobs.admit(spec, ONE_AT_A_TIME)
            platform = LockingPlatform(holder)
            running = [jobs.start(spec, [platform]) for spec in specs]
            await holder.taken.wait()
            # the log's writes find the file locked for five busy timeouts in a row: one was the old limit
            await until(lambda: store._db.locks.tries_locked >= 5)
            await holder.release()
            outcomes = await asyncio.gather(*running)
        finally:
            await holder.release()
            await registry.aclose()
        assert [o.status for o in outcomes] == ["completed"] * 3, [o.error for o in outcomes]
        assert not [e for e in platform.events if isinstance(e, DebateFailed)]
        for spec in specs:
            record = await store.get_debate(spec.id)
            assert record is not None and record.status == "completed"
            assert [t.seat for t in record.turns] == ["A", "B"]


@pytest.mark.usefixtures("small_busy_timeout")
@pytest.mark.slow
async def test_a_wait_that_ends_fails_the_debate_naming_the_lock_not_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(writer_thread.LOCK_WAIT_VARIABLE, "0.5")
    path = tmp_path / "log.db"
    holder = LockHolder(path)
    async with FakeLLMServer() as srv, Store(path, runner="cli:test") as store:
        script_judge(srv, "A")
        settings = settings_for(srv)
        registry = ProviderRegistry(settings)
        try:
            jobs = DebateJobs(Engine(registry, settings), store)
            spec = chat_spec("Should a log wait for ever?")
            await jobs.admit(spec, ONE_AT_A_TIME)
            platform = LockingPlatform(holder)
            running = jobs.start(spec, [platform])
            await until(lambda: any(isinstance(e, DebateFailed) for e in platform.events))
            await holder.release()  # the failure itself is written once the log is free
            outcome = await running
        finally:
            await holder.release()
            await registry.aclose()
        assert outcome.status == "failed" and outcome.error is not None
        assert names_the_lock(outcome.error), outcome.error
        assert "log.db stayed locked by another process for" in outcome.error
        (failed,) = [e for e in platform.events if isinstance(e, DebateFailed)]
        assert failed.outcome.error == outcome.error
        record = await store.get_debate(spec.id, turns=False)
        assert record is not None and (record.status, record.error) == ("failed", outcome.error)


@pytest.mark.parametrize("given", ["0", "-3", "soon", "inf", "nan"])
def test_a_lock_wait_that_is_not_a_positive_number_is_refused(monkeypatch: pytest.MonkeyPatch, given: str) -> None:
    monkeypatch.setenv(writer_thread.LOCK_WAIT_VARIABLE, given)
    with pytest.raises(StoreError, match="DEBATE_LOG_LOCK_WAIT_S must be a positive number"):
        Store("unused.db")
