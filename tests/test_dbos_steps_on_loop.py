"""On Postgres a DBOS step's check and record are sent from the event loop (dbos_step_hops.py,
dbos_step_records.py, dbos_loop_statements.py): no hop to the thread pool at all. Here DBOS's own steps run
through them on a real Postgres system database: results, errors, a replay from the records, a cancel seen
at the next step and an execution that lost the workflow are what DBOS's own code gives."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from dbos import DBOS, SetWorkflowID
from dbos._error import DBOSAwaitedWorkflowCancelledError, DBOSStepNondeterminismError, DBOSWorkflowConflictIDError
from dbos._outcome import Pending
from dbos._sys_db import SystemDatabase

from orchestrator.durable import dbos_step_hops
from orchestrator.durable.config import _sqlalchemy_url
from orchestrator.durable.dbos_step_records import install, loop_records
from tests.dbos_launched import config_for, launched

pytestmark = pytest.mark.postgres

APP = "debate-bot-steps-on-loop-test"
ran: list[str] = []
gate: dict[str, asyncio.Event] = {}  # what a gated workflow waits for after its first step
at_gate: dict[str, asyncio.Event] = {}  # set when it waits


async def answer(n: int) -> int:
    ran.append(f"answer {n}")
    return n * 2


async def refuse(n: int) -> int:
    ran.append(f"refuse {n}")
    raise ValueError(f"no {n}")


@DBOS.workflow(name="on_loop_steps")
async def steps(count: int) -> list[int]:
    return [await DBOS.run_step_async({"name": "answer"}, answer, i) for i in range(count)]


@DBOS.workflow(name="on_loop_refusal")
async def refusal() -> str:
    try:
        await DBOS.run_step_async({"name": "refuse"}, refuse, 7)
    except ValueError as error:
        return f"caught: {error}"
    return "not raised"


@DBOS.workflow(name="on_loop_gated")
async def gated(key: str) -> int:
    first = await DBOS.run_step_async({"name": "answer"}, answer, 1)
    at_gate[key].set()
    await gate[key].wait()
    return first + await DBOS.run_step_async({"name": "answer"}, answer, 2)


@pytest.fixture
async def sys_db(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SystemDatabase]:
    # DBOS's own `then` and `intercept` to start with (a worker started in this process earlier installed ours)
    monkeypatch.setattr(Pending, "then", dbos_step_hops.DBOS_THEN)
    monkeypatch.setattr(Pending, "intercept", dbos_step_hops.DBOS_INTERCEPT)
    async with launched(config_for(APP, _sqlalchemy_url(postgres_url), "on-loop-test")) as sys_db:
        assert install(sys_db) and loop_records(sys_db) is not None
        ran.clear()
        yield sys_db


async def run(workflow: Any, workflow_id: str, *args: Any) -> Any:
    with SetWorkflowID(workflow_id):
        return await (await DBOS.start_workflow_async(workflow, *args)).get_result()


def recorded(sys_db: SystemDatabase, workflow_id: str) -> list[tuple[Any, ...]]:
    """The step rows of `workflow_id` as stored, less their times."""
    with _connect(sys_db) as c:
        return c.execute("select function_id, function_name, output, error, child_workflow_id, serialization,"
                         " application_name from dbos.operation_outputs where workflow_uuid = %s"
                         " order by function_id", [workflow_id]).fetchall()


async def test_a_step_sends_its_check_and_record_from_the_loop(sys_db: SystemDatabase,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert await run(steps, "dbos-values", 3) == [0, 2, 4]
    assert await run(refusal, "dbos-error") == "caught: no 7"
    assert dbos_step_hops.install()

    hops: list[Any] = []
    real = asyncio.to_thread

    async def to_thread(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(func)
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    counts = []
    for count in (1, 5):
        hops.clear()
        assert await run(steps, f"ours-{count}", count) == [i * 2 for i in range(count)]
        counts.append(len(hops))
    monkeypatch.setattr(asyncio, "to_thread", real)
    assert counts[1] == counts[0]  # 4 steps more, not one hop more (the workflow's own start and end still hop)

    assert await run(steps, "ours-values", 3) == [0, 2, 4]
    assert await run(refusal, "ours-error") == "caught: no 7"
    assert recorded(sys_db, "ours-values") == recorded(sys_db, "dbos-values")
    assert recorded(sys_db, "ours-error") == recorded(sys_db, "dbos-error")
    (error_row,) = recorded(sys_db, "ours-error")
    assert error_row[1] == "refuse" and error_row[2] is None and error_row[3]  # the error stored, no output


async def test_a_replay_gets_the_recorded_results_and_a_cancel_stops_the_next_step(sys_db: SystemDatabase) -> None:
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


async def test_a_record_from_an_execution_that_lost_the_workflow_is_refused(sys_db: SystemDatabase) -> None:
    records = loop_records(sys_db)
    assert records is not None
    with _connect(sys_db) as c:  # a pending workflow, run by the execution "me"
        c.execute("insert into dbos.workflow_status (workflow_uuid, status, owner_xid)"
                  " values ('taken', 'PENDING', 'me')")
    result = {"workflow_uuid": "taken", "function_id": 7, "function_name": "answer", "started_at_epoch_ms": 1,
              "output": "o", "error": None, "child_workflow_id": None, "serialization": "py_pickle"}
    with pytest.raises(DBOSWorkflowConflictIDError):
        await records.record_on_loop(result, 5, "another-execution")
    assert recorded(sys_db, "taken") == []
    await records.record_on_loop(result, 5, "me")
    await records.record_on_loop(result, 5, "me")  # a retry finds its own row: no error
    assert [row[:3] for row in recorded(sys_db, "taken")] == [(7, "answer", "o")]
    with pytest.raises(DBOSStepNondeterminismError):  # another record for the step: not this one
        await records.record_on_loop(result, 6, "me")
    assert await records.check_on_loop("taken", 7, "answer") == {
        "output": "o", "error": None, "serialization": "py_pickle", "child_workflow_id": None, "child_shard_key": None}
    assert await records.check_on_loop("taken", 8, "answer") is None


def _connect(sys_db: SystemDatabase) -> psycopg.Connection[Any]:
    return psycopg.connect(sys_db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False),
                           autocommit=True)
