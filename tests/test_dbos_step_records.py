"""orchestrator/durable/dbos_step_records.py and dbos_stream_writes.py against the installed DBOS on a real
SQLite and Postgres system database: the prepared step check and record write the same rows, find the same
results and raise the same errors as DBOS's own, and a workflow run with them replays from them. On Postgres
the whole check, record and stream write (one statement each, in autocommit) are compared with the
transactions they replace; tests/test_dbos_autocommit.py races them with other transactions and counts
the statements each sends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from dbos import DBOS, SetWorkflowID
from dbos._error import (
    DBOSStepNondeterminismError,
    DBOSUnexpectedStepError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
)
from dbos._sys_db import SystemDatabase

from orchestrator.durable.config import _sqlalchemy_url
from orchestrator.durable.dbos_step_records import StepRecords, _Swapped
from orchestrator.durable.dbos_steps_on_loop import install
from orchestrator.durable.dbos_stream_writes import StepStreams, StreamWrite, StreamWriter
from tests.dbos_launched import config_for, launched

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

APP = "debate-bot-step-records-test"
runs: list[str] = []  # what the steps ran (a replayed step does not run again)


async def add(label: str, n: int) -> int:
    runs.append(label)
    return n + 1


async def fail(label: str) -> None:
    runs.append(label)
    raise ValueError(f"{label} failed")


@DBOS.workflow(name="step_records_contract")
async def steps(label: str) -> int:
    total = await DBOS.run_step_async({"name": "add"}, add, label, 1)
    try:
        await DBOS.run_step_async({"name": "fail", "retries_allowed": False}, fail, label)
    except ValueError:
        total += 10
    return await DBOS.run_step_async({"name": "add"}, add, label, total)


async def write_ours(values: list[Any]) -> None:
    await StepStreams().write("s", values[:2])
    await StepStreams().write("s", values[2:])


async def write_dbos(values: list[Any]) -> None:
    for value in values:
        await DBOS.write_stream_async("s", value)


@DBOS.workflow(name="step_streams_contract")
async def streams(ours: bool, values: list[Any]) -> None:
    await DBOS.run_step_async({"name": "write"}, write_ours if ours else write_dbos, values)


async def write_many(n: int) -> None:
    for i in range(n):
        await StepStreams().write("s", [i])


@DBOS.workflow(name="step_streams_many")
async def many(n: int) -> None:
    await DBOS.run_step_async({"name": "write"}, write_many, n)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def sys_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SystemDatabase]:
    """DBOS launched on a fresh system database of the parameter's kind."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'workflows.sqlite'}"
    else:
        url = _sqlalchemy_url(request.getfixturevalue("postgres_url"))
    async with launched(config_for(APP, url, "records-test")) as sys_db:
        yield sys_db


def step_rows(sys_db: SystemDatabase, workflow_id: str) -> list[tuple[Any, ...]]:
    outputs = sys_db.tables.operation_outputs
    with sys_db.engine.begin() as c:
        return [tuple(row) for row in c.execute(
            sa.select(outputs.c.function_id, outputs.c.function_name, outputs.c.output, outputs.c.error,
                      outputs.c.child_workflow_id, outputs.c.serialization, outputs.c.application_name,
                      outputs.c.started_at_epoch_ms.is_not(None), outputs.c.completed_at_epoch_ms.is_not(None),
                      outputs.c.retention_timestamp > 0)
            .where(outputs.c.workflow_uuid == workflow_id).order_by(outputs.c.function_id))]


async def run(workflow_id: str) -> int:
    """The workflow under `workflow_id`, always with the same input (so the same rows)."""
    with SetWorkflowID(workflow_id):
        return await (await DBOS.start_workflow_async(steps, "label")).get_result()


def outcome(call: Callable[[], Any]) -> Any:
    """What `call()` returned, or the type and message of what it raised."""
    try:
        return call()
    except (Exception, DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError) as exc:  # (BaseExceptions too)
        return type(exc), str(exc)


def both(sys_db: SystemDatabase, call: Callable[[Any, sa.Connection], Any]) -> tuple[Any, Any]:
    """`call(txn, conn)` with DBOS's check (or record) and with the prepared one, each in a transaction of
    its own; what each returned or raised."""
    def within(txn: Any) -> Any:
        with sys_db.engine.begin() as c:
            return call(txn, c)
    txn = sys_db._check_operation_execution_txn
    return outcome(lambda: within(txn.original)), outcome(lambda: within(txn))  # type: ignore[attr-defined]


def dbos_and_ours(sys_db: SystemDatabase, name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The system database's method `name` as DBOS runs it (on Postgres: in its own transaction, around
    our prepared `_txn`) and as installed; the same method twice where nothing was swapped (SQLite). The
    outermost layer (what a step on the loop asks, dbos_steps_on_loop.py) passes every call on off the loop."""
    method = getattr(sys_db, name)
    assert isinstance(method, _Swapped)
    method = method.original
    swapped = isinstance(method, _Swapped)
    assert swapped == (sys_db.engine.dialect.name == "postgresql"), "swapped on Postgres only"
    return (method.original if swapped else method), method


def owner_of(sys_db: SystemDatabase, workflow_id: str) -> str:
    status = sys_db.tables.workflow_status
    with sys_db.engine.begin() as c:
        return c.execute(sa.select(status.c.owner_xid).where(status.c.workflow_uuid == workflow_id)).scalar_one()


async def test_a_workflow_records_and_replays_through_prepared_steps_as_through_dbos(sys_db: SystemDatabase) -> None:
    runs.clear()
    assert await run("plain") == 13  # DBOS's own records
    assert install(sys_db) and not install(sys_db)  # once
    assert await run("prepared") == 13
    assert step_rows(sys_db, "prepared") == step_rows(sys_db, "plain")
    assert len(step_rows(sys_db, "prepared")) == 3

    # the same workflow id again: every step's result comes back from its record, nothing runs
    runs.clear()
    with SetWorkflowID("prepared"):
        handle = await DBOS.start_workflow_async(steps, "label")
    assert await handle.get_result() == 13 and runs == []
    forked = await DBOS.fork_workflow_async("prepared", 3)  # replays steps 1 and 2 from the records
    assert await forked.get_result() == 13 and runs == ["label"]


async def test_the_prepared_check_finds_and_refuses_what_dbos_does(sys_db: SystemDatabase) -> None:
    await run("w")
    install(sys_db)
    for step in (1, 2, 3, 99):  # a result, an error, a result, no record
        for name in ("add", "fail"):
            plain, prepared = both(sys_db, lambda txn, c, step=step, name=name: txn("w", step, name, c))
            assert plain == prepared
    plain, prepared = both(sys_db, lambda txn, c: txn("w", 1, "fail", c))
    assert plain[0] is DBOSUnexpectedStepError and plain == prepared
    plain, prepared = both(sys_db, lambda txn, c: txn("no-such-workflow", 1, "add", c))
    assert plain[0] is AssertionError and plain == prepared

    # the whole check, DBOS's transaction against ours (on Postgres one SELECT in autocommit)
    dbos_check, our_check = dbos_and_ours(sys_db, "check_operation_execution")
    cases = [("w", step, name) for step in (1, 2, 3, 99) for name in ("add", "fail")] + [("no-such-workflow", 1, "add")]
    found = [outcome(lambda case=case: our_check(*case)) for case in cases]
    assert found == [outcome(lambda case=case: dbos_check(*case)) for case in cases]
    assert found[0]["output"] is not None and found[3]["error"] is not None and found[6] is None  # type: ignore[index]
    assert found[1][0] is DBOSUnexpectedStepError and found[-1][0] is AssertionError

    status = sys_db.tables.workflow_status
    with sys_db.engine.begin() as c:  # as a cancel leaves a running workflow (this one has ended)
        c.execute(sa.update(status).where(status.c.workflow_uuid == "w").values(status="CANCELLED"))
    plain, prepared = both(sys_db, lambda txn, c: txn("w", 1, "add", c))
    assert plain[0] is DBOSWorkflowCancelledError and plain == prepared
    cancelled = outcome(lambda: our_check("w", 1, "add"))
    assert cancelled[0] is DBOSWorkflowCancelledError and cancelled == outcome(lambda: dbos_check("w", 1, "add"))


async def test_the_prepared_record_refuses_a_second_result_and_another_owner(sys_db: SystemDatabase) -> None:
    await run("w")
    records = StepRecords(sys_db)
    original = sys_db._record_operation_result_txn
    result = {"workflow_uuid": "w", "function_id": 1, "function_name": "add", "started_at_epoch_ms": 1,
              "output": "x", "error": None, "child_workflow_id": None, "serialization": None}
    for record in (original, lambda *a, **k: records.record_txn(original, *a, **k)):
        with pytest.raises(DBOSStepNondeterminismError), sys_db.engine.begin() as c:
            record(result, 123, c, owner_xid=None)
        with pytest.raises(DBOSWorkflowConflictIDError), sys_db.engine.begin() as c:
            record({**result, "function_id": 50}, 123, c, owner_xid="not-the-owner")
    # a new step's row, written by the prepared record only when the owner matches
    with sys_db.engine.begin() as c:
        (owner,) = c.execute(sa.select(sys_db.tables.workflow_status.c.owner_xid)
                             .where(sys_db.tables.workflow_status.c.workflow_uuid == "w")).one()
    with sys_db.engine.begin() as c:
        records.record_txn(original, {**result, "function_id": 50}, 123, c, owner_xid=owner)
    assert step_rows(sys_db, "w")[-1][:3] == (50, "add", "x")


async def test_the_whole_record_writes_and_refuses_as_dbos_does(sys_db: SystemDatabase) -> None:
    """DBOS's `record_operation_result` (on Postgres a transaction: the owner's row locked, the insert) and
    ours (on Postgres one statement in autocommit), each on a workflow of its own, step by step."""
    await run("by-dbos")
    await run("by-ours")
    install(sys_db)
    dbos_record, our_record = dbos_and_ours(sys_db, "record_operation_result")

    def result(workflow_id: str, step: int, **changes: Any) -> dict[str, Any]:
        return {"workflow_uuid": workflow_id, "function_id": step, "function_name": "add", "started_at_epoch_ms": 7,
                "output": "o", "error": None, "child_workflow_id": "child", "serialization": "py_pickle", **changes}

    def attempts(record: Callable[..., Any], workflow_id: str) -> list[Any]:
        owner = owner_of(sys_db, workflow_id)
        return [outcome(call) for call in (
            lambda: record(result(workflow_id, 40), completed_at_epoch_ms=5, owner_xid=owner),  # a new step
            lambda: record(result(workflow_id, 40), completed_at_epoch_ms=5, owner_xid=owner),  # its retry
            lambda: record(result(workflow_id, 40), completed_at_epoch_ms=6, owner_xid=owner),  # another result
            lambda: record(result(workflow_id, 41), completed_at_epoch_ms=5, owner_xid="another-execution"),
            lambda: record(result(workflow_id, 42, output=None, error="e"), owner_xid=owner),  # now, an error
            lambda: record(result(workflow_id, 43)),  # outside a workflow: no owner to check
            lambda: record(result(workflow_id, 1), completed_at_epoch_ms=5),  # a step the run recorded
            lambda: record(result(workflow_id, 44, error="e"), owner_xid=owner),  # both set
        )]

    by_dbos, by_ours = attempts(dbos_record, "by-dbos"), attempts(our_record, "by-ours")
    assert [str(o).replace("by-dbos", "by-ours") for o in by_dbos] == [str(o) for o in by_ours]
    assert [o if o is None else o[0] for o in by_ours] == [
        None, None, DBOSStepNondeterminismError, DBOSWorkflowConflictIDError, None, None,
        DBOSStepNondeterminismError, AssertionError]
    assert step_rows(sys_db, "by-ours") == step_rows(sys_db, "by-dbos")
    assert [row[0] for row in step_rows(sys_db, "by-ours")] == [1, 2, 3, 40, 42, 43]


async def test_a_steps_stream_writes_are_the_rows_dbos_writes(sys_db: SystemDatabase) -> None:
    values = [{"type": "notice", "text": "ü"}, 2, None, ["x"]]
    for workflow_id, ours in (("dbos", False), ("ours", True)):
        with SetWorkflowID(workflow_id):
            await (await DBOS.start_workflow_async(streams, ours, values)).get_result()
    table = sys_db.tables.streams

    def rows(workflow_id: str) -> list[tuple[Any, ...]]:
        with sys_db.engine.begin() as c:
            return [tuple(row) for row in c.execute(
                sa.select(table.c.key, table.c.offset, table.c.function_id, table.c.value, table.c.serialization)
                .where(table.c.workflow_uuid == workflow_id).order_by(table.c.offset))]

    assert rows("ours") == rows("dbos") and len(rows("ours")) == 4
    assert [value async for value in DBOS.read_stream_async("ours", "s")] == values


async def test_concurrent_writers_keep_each_streams_order_and_a_refused_write_stops_only_itself(
    sys_db: SystemDatabase,
) -> None:
    handles = []
    for n in range(12):
        with SetWorkflowID(f"many-{n}"):
            handles.append(await DBOS.start_workflow_async(many, 25))
    await asyncio.gather(*(handle.get_result() for handle in handles))
    for n in range(12):
        assert [value async for value in DBOS.read_stream_async(f"many-{n}", "s")] == list(range(25))

    writer = StreamWriter(sys_db)
    row = ("x", "py_pickle")
    refused = await asyncio.to_thread(writer._commit, [
        StreamWrite("many-0", 1, "not-the-owner", "t", [row]), StreamWrite("many-1", 1, None, "t", [row, row])])
    assert [type(error) for error in refused] == [DBOSWorkflowConflictIDError, type(None)]
    table = sys_db.tables.streams
    with sys_db.engine.begin() as c:
        written = c.execute(sa.select(table.c.workflow_uuid, table.c.offset).where(table.c.key == "t")
                            .order_by(table.c.workflow_uuid, table.c.offset)).all()
    assert [tuple(r) for r in written] == [("many-1", 0), ("many-1", 1)]

    # one write at a time (on Postgres one statement in autocommit): refused alone, or all its values in order
    owner = owner_of(sys_db, "many-2")
    with pytest.raises(DBOSWorkflowConflictIDError):
        await writer.write(StreamWrite("many-2", 1, "not-the-owner", "u", [row]))
    await writer.write(StreamWrite("many-2", 1, owner, "u", [("a", "py_pickle"), ("b", "py_pickle")]))
    await writer.write(StreamWrite("many-2", 2, None, "u", [("c", "x")]))
    with sys_db.engine.begin() as c:
        written = c.execute(sa.select(table.c.offset, table.c.value, table.c.function_id, table.c.serialization)
                            .where(table.c.key == "u").order_by(table.c.offset)).all()
    assert [tuple(r) for r in written] == [(0, "a", 1, "py_pickle"), (1, "b", 1, "py_pickle"), (2, "c", 2, "x")]
