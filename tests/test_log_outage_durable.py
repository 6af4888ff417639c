"""A durable debate the log stopped, whose worker is killed (SIGKILL) while it waits for the log to take its
failure (issue 18, item 2): the failure is a workflow step retried until the log accepts it, so the same
executor, launched again, settles it. Real worker subprocesses, the loopback LLM peer, the log locked by
another connection (SQLite `BEGIN EXCLUSIVE`; Postgres `LOCK TABLE turns` with a short lock_timeout)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import psycopg
import pytest

from orchestrator.durable import workflow_id
from orchestrator.durable.config import sqlite_path
from orchestrator.events import LOG_WRITE_FAILED, DebateFailed, TextDelta
from orchestrator.log.writer_thread import LOCK_WAIT_VARIABLE
from tests.debate_harness import make_spec
from tests.durable_harness import DurableBackend, StreamFollower, finish, spawn_worker
from tests.durable_recovery_harness import kill
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend
from tests.log_outage_harness import LogLock

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

SLOW_TEXT = " ".join(f"point{i}" for i in range(60))


def failed_steps(backend: DurableBackend, debate_id: str) -> int:
    """Steps of the debate's workflow recorded with an error (the one whose log write failed)."""
    sql = "select count(*) from {}operation_outputs where workflow_uuid = {} and error is not null"
    path = sqlite_path(backend.workflow_db)
    if path is not None:
        with sqlite3.connect(path) as db:
            return int(db.execute(sql.format("", "?"), [workflow_id(debate_id)]).fetchone()[0])
    assert backend.database_url is not None
    with psycopg.connect(backend.database_url, autocommit=True) as pg:
        row = pg.execute(sql.format("dbos.", "%s"), [workflow_id(debate_id)]).fetchone()
        return int(row[0]) if row else 0


async def until(condition, within: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 (another process's database: no event to await)
            await asyncio.sleep(0.05)


def status(log: LogBackend, debate_id: str) -> tuple[str, str | None]:
    ((state, error),) = log.sql("select status, error from debates where id = ?", [debate_id])
    return state, error


async def test_a_worker_killed_while_its_failure_waits_for_the_log_settles_it_when_launched_again(
    llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOCK_WAIT_VARIABLE, "1")  # the worker's SQLite log gives up on the lock after 1 s
    srv = llm_server
    script_judge(srv, "A")
    srv.add_rule(Reply(text=SLOW_TEXT, tokens_per_s=30), "model-b")
    log = backend.log(tmp_path)
    if log.name == "postgres":
        log.sql(f"alter database {log.target.rsplit('/', 1)[1]} set lock_timeout = '300ms'")
    spec = make_spec("challenge", rounds=1)
    lock = LogLock(log)
    worker = await spawn_worker(srv, log, backend, spec, request_key="trigger-outage", executor="worker-outage")
    follower = StreamFollower(backend.workflow_db, spec.id)
    reading = asyncio.create_task(follower.run())
    try:
        await follower.wait_for(lambda e: isinstance(e, TextDelta) and e.seat == "B")  # the opening is logged
        lock.take()
        await follower.wait_for(lambda e: isinstance(e, DebateFailed))
        await until(lambda: failed_steps(backend, spec.id) > 0)  # the turn's step ended in LogWriteFailed
        await kill(worker)  # while the failure waits for the log
        assert status(log, spec.id) == ("running", None)
    finally:
        lock.release()
    resumed = await spawn_worker(srv, log, backend, spec, executor="worker-outage")  # recovers the workflow
    outcome = await finish(resumed)
    reading.cancel()
    await asyncio.gather(reading, return_exceptions=True)
    assert (outcome["status"], outcome["error"]) == ("failed", LOG_WRITE_FAILED)
    assert status(log, spec.id) == ("failed", LOG_WRITE_FAILED)
