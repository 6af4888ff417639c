"""The check in front of DBOS's dequeue (orchestrator/durable/dbos_queue_poll.py), on real SQLite and Postgres
system databases, with DBOS's own queue thread polling: an idle poll is the check alone (one statement, no
dequeue transaction), and workflows enqueued before and after idle polls all run, each once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from dbos._sys_db import SystemDatabase
from sqlalchemy import event

from orchestrator.durable import dbos_queue_poll
from orchestrator.durable.config import _sqlalchemy_url
from tests.dbos_launched import config_for, launched, sqlite_url

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

APP = "debate-bot-queue-poll-test"
QUEUE = "queue-poll-test"
runs: list[str] = []


@DBOS.workflow(name="queue_poll_echo")
async def echo(text: str) -> str:
    runs.append(text)
    return text.upper()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def sys_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SystemDatabase]:
    url = (_sqlalchemy_url(request.getfixturevalue("postgres_url")) if request.param == "postgres"
           else sqlite_url(tmp_path))
    async with launched(config_for(APP, url, "queue-poll-test")) as db:
        await DBOS.register_queue_async(QUEUE, polling_interval_sec=0.05)
        runs.clear()
        yield db


async def _polls_pass(poll: dbos_queue_poll.QueuePoll, count: int) -> None:
    """Until DBOS's queue thread has made `count` more polls that the check answered alone."""
    target = poll.skipped + count
    async with asyncio.timeout(30):
        while poll.skipped < target:  # noqa: ASYNC110 (DBOS's queue thread counts: nothing to await)
            await asyncio.sleep(0.02)


async def _enqueue(text: str) -> Any:
    with SetWorkflowID(f"poll-{text}"):
        return await DBOS.enqueue_workflow_async(QUEUE, echo, text)


def _dequeues(statements: list[str]) -> list[str]:
    """DBOS's dequeue SELECT among `statements` (the next workflows of a queue by priority and age)."""
    return [s for s in statements if "priority" in s and "ORDER BY" in s.upper()]


async def test_an_idle_poll_is_one_statement_and_every_enqueued_workflow_still_runs_once(
        sys_db: SystemDatabase) -> None:
    poll = dbos_queue_poll.install(sys_db)
    assert poll is not None and dbos_queue_poll.install(sys_db) is None  # once per database
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(sys_db.engine, "before_cursor_execute", record)
    try:
        before = await _enqueue("before")  # waiting when the check runs: DBOS's dequeue takes it
        assert await before.get_result() == "BEFORE"
        assert _dequeues(statements)
        await _polls_pass(poll, 2)
        statements.clear()
        await _polls_pass(poll, 4)  # idle: the check alone, no dequeue
        idle = list(statements)
        after = await _enqueue("after")
        assert await after.get_result() == "AFTER"
    finally:
        event.remove(sys_db.engine, "before_cursor_execute", record)
    assert not _dequeues(idle) and sum("ENQUEUED" in s or "queue_name" in s for s in idle) >= 4
    assert runs == ["before", "after"]
