"""On Postgres a step's check, record and stream write (orchestrator/durable/dbos_step_records.py,
dbos_stream_writes.py) are one statement each in autocommit. Here they are counted (psycopg's trace of
what a connection sends) against the transactions they replace, and raced with another transaction
holding the workflow's row or a stream's next offset: each must end as the transaction would (the
owner read after the wait, the offset taken meanwhile skipped)."""

from __future__ import annotations

import asyncio
import inspect
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from dbos._error import DBOSWorkflowConflictIDError
from dbos._sys_db import SystemDatabase
from psycopg import pq

from orchestrator.durable.config import _sqlalchemy_url
from orchestrator.durable.dbos_steps_on_loop import install
from orchestrator.durable.dbos_stream_writes import StreamWrite, StreamWriter
from tests.dbos_launched import config_for, launched
from tests.test_dbos_step_records import dbos_and_ours, outcome

pytestmark = pytest.mark.postgres

APP = "debate-bot-autocommit-test"
WAIT_S = 30.0
WAYS = ("record, transaction", "record, one statement", "stream, transaction", "stream, one statement")


@pytest.fixture
async def sys_db(postgres_url: str) -> AsyncIterator[SystemDatabase]:
    """DBOS launched on a fresh Postgres system database, the prepared steps installed."""
    async with launched(config_for(APP, _sqlalchemy_url(postgres_url), "autocommit-test")) as sys_db:
        assert install(sys_db)
        yield sys_db


def add_workflow(sys_db: SystemDatabase, workflow_id: str, owner: str) -> None:
    """A pending workflow's row, owned by the execution `owner`, with one recorded step (1, "add")."""
    status, outputs = sys_db.tables.workflow_status, sys_db.tables.operation_outputs
    with sys_db.engine.begin() as c:
        c.execute(sa.insert(status).values(workflow_uuid=workflow_id, status="PENDING", owner_xid=owner))
        c.execute(sa.insert(outputs).values(workflow_uuid=workflow_id, function_id=1, function_name="add",
                                            output="o", retention_timestamp=1))


def step_result(workflow_id: str, step: int) -> dict[str, Any]:
    return {"workflow_uuid": workflow_id, "function_id": step, "function_name": "add", "started_at_epoch_ms": 1,
            "output": "o", "error": None, "child_workflow_id": None, "serialization": "py_pickle"}


def server_prepared(pgconn: Any) -> dict[str, str]:
    """The first word of each statement this connection has prepared, by name, asked at the protocol's level
    (outside psycopg's transaction handling, so it starts none)."""
    result = pgconn.exec_(b"SELECT name, statement FROM pg_prepared_statements")
    rows = ((result.get_value(i, 0), result.get_value(i, 1)) for i in range(result.ntuples))
    return {name.decode(): sql.decode().split()[0].upper() for name, sql in rows}


def statement_kinds(trace: list[str], prepared: dict[str, str]) -> list[str]:
    """Each statement in one connection's trace, named by its SQL's first word: a Query of the simple
    protocol, or an Execute of the extended one named by the Parse of the statement bound before it; a
    statement prepared before the trace began is found in `prepared`."""
    sent: list[str] = []
    prepared = dict(prepared)
    bound = ""
    for line in trace:
        if not line.startswith("F\t"):  # sent by the server, or a statement's text going on
            continue
        _origin, _length, message, *rest = line.rstrip("\n").split("\t")
        text = rest[0].strip() if rest else ""
        if message == "Query":
            sent.append(text.strip('"').split()[0].upper())
        elif message == "Parse":  # "<statement name>" "<sql>" …
            quoted = text.split('"')
            prepared[quoted[1]] = quoted[3].split()[0].upper()
        elif message == "Bind":  # "<portal>" "<statement name>" …
            bound = text.split('"')[3]
        elif message == "Execute":
            sent.append(prepared.get(bound, "PREPARED"))
    return sent


@contextmanager
def statements(sys_db: SystemDatabase) -> Iterator[list[str]]:
    """The statements this thread's connections of `sys_db` send meanwhile, filled in at the end: psycopg's
    trace of the protocol, each Query of the simple protocol (psycopg's own BEGIN and COMMIT) and each
    Execute of the extended one (a statement with parameters), named by its SQL's first word. psycopg
    prepares a statement run often enough and then only binds it, so what each connection has prepared is
    asked at checkout. The pool's ping at checkout comes before the trace starts."""
    me = threading.get_ident()
    sent: list[str] = []
    checkouts: list[tuple[int, dict[str, str]]] = []  # where in the trace each checkout begins, its statements

    with tempfile.TemporaryFile("w+b") as trace:
        def checkout(driver: Any, _record: Any, _proxy: Any) -> None:
            if threading.get_ident() == me:
                checkouts.append((os.fstat(trace.fileno()).st_size, server_prepared(driver.pgconn)))
                driver.pgconn.trace(trace.fileno())
                driver.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)

        def checkin(driver: Any, _record: Any) -> None:
            if threading.get_ident() == me and driver.pgconn is not None:
                driver.pgconn.untrace()  # flushes the trace

        sa.event.listen(sys_db.engine, "checkout", checkout)
        sa.event.listen(sys_db.engine, "checkin", checkin)
        try:
            yield sent
        finally:
            sa.event.remove(sys_db.engine, "checkout", checkout)
            sa.event.remove(sys_db.engine, "checkin", checkin)
            trace.seek(0)
            raw = trace.read()
            ends = [start for start, _ in checkouts[1:]] + [len(raw)]
            for (start, prepared), end in zip(checkouts, ends, strict=True):
                lines = raw[start:end].decode(errors="replace").splitlines(keepends=True)
                sent.extend(statement_kinds(lines, prepared))


def test_a_step_check_record_and_stream_write_are_one_statement_each(sys_db: SystemDatabase) -> None:
    add_workflow(sys_db, "w", "me")
    dbos_check, our_check = dbos_and_ours(sys_db, "check_operation_execution")
    dbos_record, our_record = dbos_and_ours(sys_db, "record_operation_result")
    for _ in range(12):  # past psycopg preparing a statement run 5 times on a connection (the pool may alternate two)
        with statements(sys_db) as before:
            assert dbos_check("w", 1, "add")["output"] == "o"
        with statements(sys_db) as after:
            assert our_check("w", 1, "add")["output"] == "o"
        assert (before, after) == (["BEGIN", "SELECT", "COMMIT"], ["SELECT"])

    with statements(sys_db) as before:
        dbos_record(step_result("w", 2), owner_xid="me")
    with statements(sys_db) as after:
        our_record(step_result("w", 3), owner_xid="me")
    assert (before, after) == (["BEGIN", "SELECT", "INSERT", "COMMIT"], ["INSERT"])
    with statements(sys_db) as unchecked:  # no owner to check (outside a workflow)
        our_record(step_result("w", 4))
    assert unchecked == ["INSERT"]



async def test_a_stream_write_is_one_statement_sent_from_the_loop(sys_db: SystemDatabase) -> None:
    add_workflow(sys_db, "w", "me")
    row = ("v", "py_pickle")
    with statements(sys_db) as before:
        assert StreamWriter(sys_db)._commit([StreamWrite("w", 2, "me", "s", [row])]) == [None]
    assert before == ["BEGIN", "SELECT", "INSERT", "COMMIT"]

    traced: list[tuple[Any, Any]] = []  # each connection of the loop's pool, and the file its trace goes to

    async def configure(conn: Any) -> None:
        trace = tempfile.TemporaryFile("w+b")
        traced.append((conn, trace))
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)

    writer = StreamWriter(sys_db, hooks={"configure": configure})
    assert writer.notifier is not None
    writer.notifier.coalesce_s = 60.0  # every write's wake-up waits for the one flush at close
    here = threading.get_ident()
    checkouts: list[int] = []  # of DBOS's engine by this thread, or by a thread of the loop's pool
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(thread_name_prefix="would-be-hop"))

    def checkout(*_: Any) -> None:
        if threading.get_ident() == here or threading.current_thread().name.startswith("would-be-hop"):
            checkouts.append(threading.get_ident())

    sa.event.listen(sys_db.engine, "checkout", checkout)
    sizes = [1] * 6 + [3]  # past psycopg preparing a statement run 5 times, and several values at once
    sent: list[list[str]] = []  # per connection of the loop's pool (sequential writes may take turns on two)
    try:
        for size in sizes:
            await writer.alone(StreamWrite("w", 2, "me", "s", [row] * size))
        assert sys_db._pending_notifications == {}  # nothing left for DBOS's notifier thread to send
        await writer.notifier.close()
    finally:
        sa.event.remove(sys_db.engine, "checkout", checkout)
        for conn, trace in traced:
            conn.pgconn.untrace()  # flushes it
            trace.seek(0)
            sent.append(statement_kinds(trace.read().decode(errors="replace").splitlines(keepends=True), {}))
            trace.close()
        assert writer.loop_statements is not None
        await writer.loop_statements.close()
    assert checkouts == []
    assert sorted(kind for kinds in sent for kind in kinds) == ["INSERT"] * len(sizes) + ["SELECT"]
    assert [kinds[-1] for kinds in sent if "SELECT" in kinds] == ["SELECT"]  # the wake-ups: one pg_notify, last
    assert writer.notifier.sent == 1
    assert written(sys_db, "w")[1] == [(n, "v") for n in range(1 + sum(sizes))]


async def waited_for(sys_db: SystemDatabase, pid: int, task: asyncio.Future[Any]) -> None:
    """Until a backend waits for a lock the backend `pid` holds (polled: Postgres announces no lock wait);
    fails if `task` ends first, having waited for nothing."""
    deadline = time.monotonic() + WAIT_S
    while not task.done() and time.monotonic() < deadline:
        with sys_db.engine.connect() as c:
            if c.exec_driver_sql("select count(*) from pg_stat_activity where %(pid)s = any(pg_blocking_pids(pid))",
                                 {"pid": pid}).scalar():
                return
        await asyncio.sleep(0.005)
    raise AssertionError(f"no wait for the other transaction: {task.result() if task.done() else 'timed out'}")


async def awaited_outcome(call: Callable[[], Awaitable[Any]]) -> Any:
    """`outcome` of a coroutine function, awaited on the loop."""
    try:
        return await call()
    except (Exception, DBOSWorkflowConflictIDError) as exc:  # (a BaseException)
        return type(exc), str(exc)


async def behind(sys_db: SystemDatabase, blocker_sql: str, call: Callable[[], Any]) -> Any:
    """What `call()` (run in a thread, or awaited on the loop if it is a coroutine function) returned or
    raised, started while another transaction that ran `blocker_sql` is open, which commits once `call`'s
    statement waits for it."""
    with sys_db.engine.connect() as blocker:
        blocker.exec_driver_sql(blocker_sql)
        pid = blocker.connection.dbapi_connection.info.backend_pid  # type: ignore[union-attr]
        task = asyncio.ensure_future(awaited_outcome(call) if inspect.iscoroutinefunction(call)
                                     else asyncio.to_thread(outcome, call))
        try:
            await waited_for(sys_db, pid, task)
        finally:
            blocker.commit()
    return await asyncio.wait_for(task, WAIT_S)


def writers(sys_db: SystemDatabase, workflow_id: str) -> dict[str, Callable[[], Any]]:
    """A record and a stream write for `workflow_id` by its execution "me": DBOS's transaction and our statement."""
    dbos_record, our_record = dbos_and_ours(sys_db, "record_operation_result")
    writer = StreamWriter(sys_db)
    write = StreamWrite(workflow_id, 9, "me", "s", [("v", "py_pickle"), ("w", "py_pickle")])

    def committed(refused: list[Exception | None]) -> None:
        if refused[0] is not None:
            raise refused[0]

    async def alone() -> None:
        await writer.alone(write)

    return {"record, transaction": lambda: dbos_record(step_result(workflow_id, 9), owner_xid="me"),
            "record, one statement": lambda: our_record(step_result(workflow_id, 9), owner_xid="me"),
            "stream, transaction": lambda: committed(writer._commit([write])),
            "stream, one statement": alone}


def written(sys_db: SystemDatabase, workflow_id: str) -> tuple[list[int], list[tuple[int, str]]]:
    """The steps recorded for `workflow_id` and its stream's (offset, value)s."""
    outputs, streams = sys_db.tables.operation_outputs, sys_db.tables.streams
    with sys_db.engine.begin() as c:
        steps = c.execute(sa.select(outputs.c.function_id).where(outputs.c.workflow_uuid == workflow_id)
                          .order_by(outputs.c.function_id)).scalars().all()
        rows = c.execute(sa.select(streams.c.offset, streams.c.value).where(streams.c.workflow_uuid == workflow_id)
                         .order_by(streams.c.offset)).all()
    return list(steps), [(offset, value) for offset, value in rows]


async def test_a_write_waiting_for_the_workflows_row_sees_the_owner_committed_meanwhile(sys_db: SystemDatabase) -> None:
    races = [  # the owner before, what the other transaction changes, and whether the write then lands
        ("me", "owner_xid = 'another-execution'", False),  # a new execution took the workflow over
        ("me", "owner_xid = null", False),  # as a cancel leaves it
        ("before-me", "owner_xid = 'me'", True),  # only the row's newest version is this execution's
        ("me", "status = status", True),  # a new version, the owner unchanged
    ]
    for n, (before, change, lands) in enumerate(races):
        for way in WAYS:
            workflow_id = f"race-{n}-{way.replace(', ', '-').replace(' ', '-')}"
            add_workflow(sys_db, workflow_id, before)
            update = f"update dbos.workflow_status set {change} where workflow_uuid = '{workflow_id}'"
            got = await behind(sys_db, update, writers(sys_db, workflow_id)[way])
            expected = None if lands else (DBOSWorkflowConflictIDError,
                                           str(DBOSWorkflowConflictIDError(workflow_id)))
            assert got == expected, (change, way)
            steps, stream = written(sys_db, workflow_id)
            if way.startswith("record"):
                assert steps == ([1, 9] if lands else [1]), (change, way)
            else:
                assert stream == ([(0, "v"), (1, "w")] if lands else []), (change, way)


async def test_a_stream_write_behind_another_taking_its_offset_writes_after_it(sys_db: SystemDatabase) -> None:
    for way in ("stream, transaction", "stream, one statement"):
        workflow_id = f"offset-{way.split(', ')[1].replace(' ', '-')}"
        add_workflow(sys_db, workflow_id, "me")
        # another execution's write, not yet committed, holds offset 0: ours waits for it, collides, tries again
        other = (f"insert into dbos.streams (workflow_uuid, function_id, key, value, serialization, \"offset\")"
                 f" values ('{workflow_id}', 3, 's', 'first', 'py_pickle', 0)")
        assert await behind(sys_db, other, writers(sys_db, workflow_id)[way]) is None, way
        assert written(sys_db, workflow_id)[1] == [(0, "first"), (1, "v"), (2, "w")], way
