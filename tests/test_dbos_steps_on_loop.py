"""A DBOS step's check and record are sent from the event loop (dbos_step_hops.py, dbos_steps_on_loop.py; on
Postgres through async psycopg, on SQLite on the loop's own connection to the file): no hop to the thread pool
at all. Here DBOS's own steps run through them on real Postgres and SQLite system databases: results, errors, a
replay from the records, a cancel seen at the next step and an execution that lost the workflow are what DBOS's
own code gives; on SQLite a file locked by another connection sends the step through DBOS's pool instead."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from dbos import DBOS, SetWorkflowID
from dbos._error import DBOSAwaitedWorkflowCancelledError, DBOSStepNondeterminismError, DBOSWorkflowConflictIDError
from dbos._outcome import Pending
from dbos._sys_db import SystemDatabase

from orchestrator.durable import dbos_step_hops, dbos_steps_ahead
from orchestrator.durable.config import _sqlalchemy_url, dbos_config
from orchestrator.durable.dbos_steps_on_loop import install, loop_steps
from orchestrator.durable.dbos_stream_writes import StepStreams, StreamWrite, StreamWriter
from tests.dbos_launched import config_for, launched, sqlite_url
from tests.test_dbos_step_hops import answer, hops_per_step, ran, refusal, steps

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

APP = "debate-bot-steps-on-loop-test"
gate: dict[str, asyncio.Event] = {}  # what a gated workflow waits for after its first step
at_gate: dict[str, asyncio.Event] = {}  # set when it waits


@DBOS.workflow(name="on_loop_gated")
async def gated(key: str) -> int:
    first = await DBOS.run_step_async({"name": "answer"}, answer, 1)
    at_gate[key].set()
    await gate[key].wait()
    return first + await DBOS.run_step_async({"name": "answer"}, answer, 2)


@DBOS.workflow(name="on_loop_riding")
async def riding(n: int) -> list[bool]:
    """n steps, each handing a value to its record; what `ride` said for each."""
    async def hand(i: int) -> bool:
        return StepStreams().ride("s", [f"v{i}"])

    return [await DBOS.run_step_async({"name": "hand"}, hand, i) for i in range(n)]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def sys_db(request: pytest.FixtureRequest, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SystemDatabase]:
    # DBOS's own `then` and `intercept` to start with (a worker started in this process earlier installed ours)
    monkeypatch.setattr(Pending, "then", dbos_step_hops.DBOS_THEN)
    monkeypatch.setattr(Pending, "intercept", dbos_step_hops.DBOS_INTERCEPT)
    url = (_sqlalchemy_url(request.getfixturevalue("postgres_url")) if request.param == "postgres"
           else sqlite_url(tmp_path))
    config = config_for(APP, url, "on-loop-test")
    if request.param == "sqlite":
        config["db_engine_kwargs"] = dbos_config(url, "on-loop-test")["db_engine_kwargs"]  # the worker's (WAL)
    async with launched(config) as sys_db:
        assert install(sys_db)
        steps = loop_steps(sys_db)
        assert steps is not None and steps.available
        ran.clear()
        yield sys_db


async def run(workflow: Any, workflow_id: str, *args: Any) -> Any:
    with SetWorkflowID(workflow_id):
        return await (await DBOS.start_workflow_async(workflow, *args)).get_result()


def recorded(sys_db: SystemDatabase, workflow_id: str) -> list[tuple[Any, ...]]:
    """The step rows of `workflow_id` as stored, less their times."""
    outputs = sys_db.tables.operation_outputs
    with sys_db.engine.begin() as c:
        rows = c.execute(sa.select(outputs.c.function_id, outputs.c.function_name, outputs.c.output,
                                   outputs.c.error, outputs.c.child_workflow_id, outputs.c.serialization,
                                   outputs.c.application_name)
                         .where(outputs.c.workflow_uuid == workflow_id).order_by(outputs.c.function_id)).all()
    return [tuple(row) for row in rows]


async def test_a_step_sends_its_check_and_record_from_the_loop(sys_db: SystemDatabase,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    await quiet(sys_db, monkeypatch)  # on SQLite a step never finds the file taken (the hops are counted)
    assert await run(steps, "dbos-values", 3) == [0, 2, 4]
    assert await run(refusal, "dbos-error") == "caught: no 7"
    assert dbos_step_hops.install()

    # 4 steps more, not one hop more (the workflow's own start and end still hop)
    assert await hops_per_step(monkeypatch, "ours") == 0

    assert await run(steps, "ours-values", 3) == [0, 2, 4]
    assert await run(refusal, "ours-error") == "caught: no 7"
    assert recorded(sys_db, "ours-values") == recorded(sys_db, "dbos-values")
    assert recorded(sys_db, "ours-error") == recorded(sys_db, "dbos-error")
    (error_row,) = recorded(sys_db, "ours-error")
    assert error_row[1] == "refuse" and error_row[2] is None and error_row[3]  # the error stored, no output


async def test_a_replay_gets_the_recorded_results_and_a_cancel_stops_the_next_step(
        sys_db: SystemDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dbos_steps_ahead, "FRESH_S", 0.0)  # the cancel lands long after step 1 (see below)
    assert dbos_step_hops.install()
    assert await run(steps, "original", 3) == [0, 2, 4]
    ran.clear()
    # a fork from the third step: the first two are replayed from the records the check finds, the third runs
    forked = await DBOS.fork_workflow_async("original", 3, application_version=None)
    assert await forked.get_result() == [0, 2, 4]
    assert ran == ["answer 2"]

    ran.clear()
    gate["c"], at_gate["c"] = asyncio.Event(), asyncio.Event()
    with SetWorkflowID("cancelled"):
        handle = await DBOS.start_workflow_async(gated, "c")
    await asyncio.wait_for(at_gate["c"].wait(), 30)
    await DBOS.cancel_workflow_async("cancelled")
    gate["c"].set()
    with pytest.raises(DBOSAwaitedWorkflowCancelledError):
        await asyncio.wait_for(handle.get_result(), 30)
    assert ran == ["answer 1"]  # the second step's check saw the cancel: it never ran
    assert [row[0] for row in recorded(sys_db, "cancelled")] == [1]


async def test_a_first_run_sends_one_check_and_a_cancel_right_after_a_step_is_refused_at_the_next_record(
        sys_db: SystemDatabase) -> None:
    if sys_db.engine.dialect.name != "postgresql":
        pytest.skip("checks left unsent: Postgres")
    steps_on_loop = loop_steps(sys_db)
    assert steps_on_loop is not None and dbos_step_hops.install()
    sent, unsent = steps_on_loop.sent, steps_on_loop.ahead.unsent
    assert await run(steps, "first-run", 3) == [0, 2, 4]
    # one check read that nothing is recorded ahead; the records since kept the workflow this execution's
    assert (steps_on_loop.sent - sent, steps_on_loop.ahead.unsent - unsent) == (1 + 3, 2)  # 1 check + 3 records

    ran.clear()  # a cancel between two steps, within FRESH_S of the first's record: the second's check
    gate["r"], at_gate["r"] = asyncio.Event(), asyncio.Event()  # is not sent, so it runs, but the cancel
    with SetWorkflowID("cancelled-right-after"):  # cleared the owner: its record is refused and the
        handle = await DBOS.start_workflow_async(gated, "r")  # execution ends as a cancelled one does
    await asyncio.wait_for(at_gate["r"].wait(), 30)
    await DBOS.cancel_workflow_async("cancelled-right-after")
    gate["r"].set()
    with pytest.raises(DBOSAwaitedWorkflowCancelledError):
        await asyncio.wait_for(handle.get_result(), 30)
    assert [row[0] for row in recorded(sys_db, "cancelled-right-after")] == [1]


async def test_a_record_from_an_execution_that_lost_the_workflow_is_refused(sys_db: SystemDatabase) -> None:
    steps = loop_steps(sys_db)
    assert steps is not None
    status = sys_db.tables.workflow_status
    with sys_db.engine.begin() as c:  # a pending workflow, run by the execution "me"
        c.execute(sa.insert(status).values(workflow_uuid="taken", status="PENDING", owner_xid="me"))
    result = {"workflow_uuid": "taken", "function_id": 7, "function_name": "answer", "started_at_epoch_ms": 1,
              "output": "o", "error": None, "child_workflow_id": None, "serialization": "py_pickle"}
    with pytest.raises(DBOSWorkflowConflictIDError):
        await steps.record(result, 5, "another-execution")
    assert recorded(sys_db, "taken") == []
    await steps.record(result, 5, "me")
    await steps.record(result, 5, "me")  # a retry finds its own row: no error
    assert [row[:3] for row in recorded(sys_db, "taken")] == [(7, "answer", "o")]
    with pytest.raises(DBOSStepNondeterminismError):  # another record for the step: not this one
        await steps.record(result, 6, "me")
    assert await steps.check("taken", 7, "answer") == {
        "output": "o", "error": None, "serialization": "py_pickle", "child_workflow_id": None, "child_shard_key": None}
    assert await steps.check("taken", 8, "answer") is None


async def test_on_sqlite_a_locked_file_sends_the_step_through_the_pool(sys_db: SystemDatabase,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if sys_db.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's write lock")
    steps = loop_steps(sys_db)
    assert steps is not None and steps.sqlite is not None
    assert dbos_step_hops.install()
    status = sys_db.tables.workflow_status
    with sys_db.engine.begin() as c:
        c.execute(sa.insert(status).values(workflow_uuid="locked", status="PENDING", owner_xid="me"))
    result = {"workflow_uuid": "locked", "function_id": 1, "function_name": "answer", "started_at_epoch_ms": 1,
              "output": "o", "error": None, "child_workflow_id": None, "serialization": "py_pickle"}
    hops: list[Any] = []
    hopped = asyncio.Event()
    real = asyncio.to_thread

    async def to_thread(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(func)
        hopped.set()
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    other = sqlite3.connect(str(sys_db.engine.url.database), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
    assert await steps.check("locked", 1, "answer") is None  # a read is not kept waiting (WAL)
    record = asyncio.ensure_future(steps.record(result, 5, "me"))
    await asyncio.wait_for(hopped.wait(), 30)  # the record went to DBOS's pool, where it waits for the lock
    assert not record.done()
    other.execute("COMMIT")
    await asyncio.wait_for(record, 30)
    other.close()
    monkeypatch.setattr(asyncio, "to_thread", real)
    assert len(hops) == 1 and [row[:3] for row in recorded(sys_db, "locked")] == [(1, "answer", "o")]
    await steps.record(result, 5, "me")  # the file free again: the loop's own connection, no hop
    assert len(hops) == 1


async def quiet(sys_db: SystemDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """On SQLite, no write of DBOS's own from here on, so that the loop has the file at once, never DBOS's
    pool: its background jobs (a write transaction each, every second) do nothing once they have run once
    as patched, which says the run that may have been under way has ended."""
    if sys_db.engine.dialect.name != "sqlite":
        return
    ran_patched = threading.Event()

    def nothing_delayed(*args: Any, **kwargs: Any) -> None:
        ran_patched.set()

    monkeypatch.setattr(sys_db, "transition_delayed_workflows", nothing_delayed)
    monkeypatch.setattr(sys_db, "cancel_timed_out_workflows", lambda *args, **kwargs: [])
    assert await asyncio.to_thread(ran_patched.wait, 30)


def streamed(sys_db: SystemDatabase, workflow_id: str) -> list[tuple[int, int, str]]:
    """The stream `s` of `workflow_id` as stored: (offset, step id, value)."""
    streams = sys_db.tables.streams
    with sys_db.engine.begin() as c:
        rows = c.execute(sa.select(streams.c.offset, streams.c.function_id, streams.c.value)
                         .where(streams.c.workflow_uuid == workflow_id, streams.c.key == "s")
                         .order_by(streams.c.offset)).all()
    return [tuple(row) for row in rows]  # type: ignore[misc]


async def test_a_stream_write_handed_to_a_step_goes_with_its_record_or_not_at_all(
        sys_db: SystemDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """On Postgres in the record's statement; on SQLite, which keeps them apart, just before it."""
    postgres = sys_db.engine.dialect.name == "postgresql"
    steps = loop_steps(sys_db)
    assert steps is not None
    await quiet(sys_db, monkeypatch)
    status = sys_db.tables.workflow_status
    with sys_db.engine.begin() as c:
        c.execute(sa.insert(status).values(workflow_uuid="rode", status="PENDING", owner_xid="me"))
    result = {"workflow_uuid": "rode", "function_id": 7, "function_name": "answer", "started_at_epoch_ms": 1,
              "output": "o", "error": None, "child_workflow_id": None, "serialization": "py_pickle"}

    async def no_write_of_its_own(self: StreamWriter, write: StreamWrite) -> None:
        raise AssertionError("a ride was written apart from its record")

    if postgres:
        monkeypatch.setattr(StreamWriter, "write", no_write_of_its_own)
    theirs = StreamWrite("rode", 7, "another-execution", "s", [("v0", "json")])
    with pytest.raises(DBOSWorkflowConflictIDError):  # the record refused: its ride is not written either
        await steps.record(result, 5, "another-execution", rides=[theirs])
    assert recorded(sys_db, "rode") == [] and streamed(sys_db, "rode") == []

    sent = steps.sent
    mine = [StreamWrite("rode", 7, "me", "s", [("v0", "json")]), StreamWrite("rode", 7, "me", "s", [("v1", "json")])]
    await steps.record(result, 5, "me", rides=mine)
    assert (steps.sent, steps.pooled) == (sent + 1, 0)  # on Postgres one statement for both
    assert [row[:3] for row in recorded(sys_db, "rode")] == [(7, "answer", "o")]
    assert streamed(sys_db, "rode") == [(0, 7, "v0"), (1, 7, "v1")]


@pytest.mark.postgres
async def test_on_postgres_a_ride_whose_offset_was_taken_meanwhile_tries_again_after_it(
        sys_db: SystemDatabase, postgres_url: str) -> None:
    if sys_db.engine.dialect.name != "postgresql":
        pytest.skip("Postgres's unique key seen by a statement that waited")
    import psycopg

    steps = loop_steps(sys_db)
    assert steps is not None
    status, streams = sys_db.tables.workflow_status, sys_db.tables.streams
    with sys_db.engine.begin() as c:
        c.execute(sa.insert(status).values(workflow_uuid="raced", status="PENDING", owner_xid="me"))
    result = {"workflow_uuid": "raced", "function_id": 2, "function_name": "answer", "started_at_epoch_ms": 1,
              "output": "o", "error": None, "child_workflow_id": None, "serialization": "py_pickle"}
    with psycopg.connect(postgres_url) as other:  # another writer took offset 0 and has not committed yet
        other.execute(f"insert into {sys_db.schema}.{streams.name} (workflow_uuid, function_id, key, value,"
                      " serialization, \"offset\") values ('raced', 1, 's', 'theirs', 'json', 0)")
        record = asyncio.ensure_future(steps.record(result, 5, "me",
                                                    rides=[StreamWrite("raced", 2, "me", "s", [("mine", "json")])]))
        with psycopg.connect(postgres_url, autocommit=True) as watch:  # until the record waits on the other's key
            while not watch.execute("select count(*) from pg_stat_activity where wait_event_type = 'Lock'"
                                    " and query like '%%streamed%%'").fetchone()[0]:  # type: ignore[index]
                assert not record.done()
                await asyncio.sleep(0.01)
        other.commit()
    await asyncio.wait_for(record, 30)
    assert streamed(sys_db, "raced") == [(0, 1, "theirs"), (1, 2, "mine")]
    assert [row[:3] for row in recorded(sys_db, "raced")] == [(2, "answer", "o")]


async def test_a_steps_end_hands_its_writes_to_its_record_only_where_the_loop_records_it_on_postgres(
        sys_db: SystemDatabase) -> None:
    assert await run(riding, "dbos-records", 2) == [False, False]  # DBOS's own records: nothing to hand to
    assert dbos_step_hops.install()
    if sys_db.engine.dialect.name != "postgresql":  # SQLite's records take none (its writes share a transaction)
        assert await run(riding, "loop-records", 2) == [False, False]
        assert streamed(sys_db, "loop-records") == []
        return
    assert await run(riding, "loop-records", 3) == [True, True, True]
    assert [(offset, step) for offset, step, _value in streamed(sys_db, "loop-records")] == [(0, 1), (1, 2), (2, 3)]
    assert [value async for value in DBOS.read_stream_async("loop-records", "s")] == ["v0", "v1", "v2"]
