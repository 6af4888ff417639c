"""A purge and the workflow engine (issue 55), on SQLite files and on Postgres: a debate that ran as a DBOS
workflow leaves no record in the workflow database either (its status, inputs, steps, outputs and stream),
deleted through DBOS's client after the log's transaction; a running debate is stopped first, then purged."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from orchestrator.durable import FrontFeed, workflow_id
from orchestrator.durable.config import APP_NAME, sqlite_path
from orchestrator.durable.purge_records import ClientRecords
from orchestrator.log.purge import PurgeSelection
from orchestrator.purge import purge
from tests.debate_harness import make_spec
from tests.durable_harness import DurableBackend, enqueued, worker_host
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

WORKFLOW_TABLES = ("workflow_status", "workflow_input", "workflow_output", "operation_outputs", "workflow_events",
                   "streams")


def workflow_rows(backend: DurableBackend, log: LogBackend, workflow: str) -> dict[str, int]:
    """Rows each of DBOS's tables holds for `workflow`, read from its database directly (Postgres: the log's
    database, DBOS's schema)."""
    found: dict[str, int] = {}
    path = sqlite_path(backend.workflow_db)
    for table in WORKFLOW_TABLES:
        sql = f"select count(*) from {{}}{table} where workflow_uuid = ?"
        if path is not None:
            conn = sqlite3.connect(path)
            try:
                found[table] = int(conn.execute(sql.format(""), [workflow]).fetchone()[0])
            finally:
                conn.close()
        else:
            found[table] = int(log.sql(sql.format("dbos."), [workflow])[0][0])
    return found


async def test_a_purge_deletes_the_workflows_records_and_stops_a_running_debate_first(
    llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend
) -> None:
    srv = llm_server
    script_judge(srv, "A")
    gate = asyncio.Event()
    srv.add_rule(Reply(gate=gate), match="Will the held debate ever finish?")
    log = backend.log(tmp_path)
    ended = make_spec("challenge", rounds=1)
    held = make_spec("challenge", rounds=1, topic="Will the held debate ever finish?")
    async with worker_host(srv, log, backend) as host:
        await (await enqueued(host, ended, "purge-ended")).get_result(polling_interval_sec=0.05)
        await enqueued(host, held, "purge-held")
        await srv.wait_for_requests(5)  # the held debate's first call is open
        assert workflow_rows(backend, log, workflow_id(ended.id))["operation_outputs"] > 0
        assert workflow_rows(backend, log, workflow_id(ended.id))["streams"] > 0
        feed = await FrontFeed.connect(backend.workflow_db, application_name=APP_NAME)
        try:
            async with log.open() as store:
                report = await purge(store, PurgeSelection(debate=ended.id), engine=ClientRecords(feed.client))
                assert report.purged == [ended.id]
                report = await purge(store, PurgeSelection(debate=held.id), engine=ClientRecords(feed.client))
                assert report.stopped == [held.id] and report.purged == [held.id]
        finally:
            gate.set()
            await feed.close()
    for debate_id in (ended.id, held.id):
        assert set(workflow_rows(backend, log, workflow_id(debate_id)).values()) == {0}, (
            debate_id == held.id, workflow_rows(backend, log, workflow_id(debate_id)))
        assert log.sql("select count(*) from debates where id = ?", [debate_id])[0][0] == 0
        assert log.sql("select count(*) from turns where debate_id = ?", [debate_id])[0][0] == 0
