"""A DBOS step's check and record sent from the event loop, not from DBOS's thread pool (dbos_step_hops.py
runs DBOS's step code on the loop and calls these).

DBOS's check and record are blocking functions of the system database. Run on the loop inside `on_loop`,
the outermost layer `install` puts around them (`captured_check`, `captured_record`, over those of
dbos_step_records.install) stops them before they touch the database: the check raises `Fetch` with what to
read and, asked again, returns the answer the loop read; the record leaves its row in `OnLoop.record`.
`LoopSteps` then reads and writes from the loop with the same prepared statements
(dbos_step_records.StepRecords) and makes of the rows what DBOS's code makes:

- Postgres: one statement each through async psycopg (dbos_loop_statements.py); a check the statements
  before it have answered already is not sent (dbos_steps_ahead.py).
- SQLite: the loop's own connection to the file (dbos_loop_sqlite.py), the record in its own transaction
  (the owner checked, then the insert), as DBOS's; when the file stays locked by another connection through
  a few short tries (`when_free`) the step goes through DBOS's pool as before (`POOL`).

On Postgres a record takes with it, in its statement, the stream writes its step's end handed over
(dbos_stream_writes.Rides). SQLite keeps them apart: its stream writes already share one transaction across
debates, and a record's transaction that wrote them too would hold the file longer (bench.cpu_compare
--together: no less CPU, 2 workers 1.036× as much).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
import weakref
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import psycopg
from dbos._context import current_owner_xid
from dbos._dbos import _get_dbos_instance
from dbos._debug_trigger import DebugTriggers
from dbos._error import DBOSStepNondeterminismError
from dbos._sys_db import SystemDatabase

from orchestrator.durable import dbos_loop_notify, dbos_loop_sqlite, dbos_loop_statements, dbos_step_records
from orchestrator.durable.dbos_loop_sqlite import Busy, LoopSQLite, file_of, unique_violation, when_free
from orchestrator.durable.dbos_loop_statements import LoopStatements
from orchestrator.durable.dbos_step_records import StepRecords, on_driver, swap
from orchestrator.durable.dbos_steps_ahead import StepsAhead
from orchestrator.durable.dbos_stream_writes import StreamWrite, joined, write_each, writer_for

_UNASKED = object()
log = logging.getLogger(__name__)
POOL = object()  # the loop could not do it at once: DBOS's own code does it in the pool


@dataclass
class OnLoop:
    """One step's check or record run on the loop: the check's answer once read there, the record's
    arguments once DBOS's code has built them."""

    answer: Any = _UNASKED
    record: tuple[Any, int, str | None] | None = None  # (DBOS's result, completed at, owner)


on_loop: ContextVar[OnLoop | None] = ContextVar("dbos_step_on_loop", default=None)


class Fetch(BaseException):
    """The check, asked on the loop: (workflow id, step id, step name) to read there. A BaseException, so
    nothing between DBOS's check and its caller (its retry) takes it for a failure."""


def captured_check(original: Any, workflow_id: str, function_id: int, function_name: str, **kwargs: Any) -> Any:
    """DBOS's `check_operation_execution`, or on the loop what to read (`Fetch`), then what was read."""
    step = on_loop.get()
    if step is None:
        return original(workflow_id, function_id, function_name, **kwargs)
    if step.answer is _UNASKED:
        raise Fetch(workflow_id, function_id, function_name)
    return step.answer


def captured_record(original: Any, result: Any, *, completed_at_epoch_ms: int | None = None,
                    owner_xid: str | None = None, **kwargs: Any) -> None:
    """DBOS's `record_operation_result`, or on the loop its row left to the loop to write."""
    step = on_loop.get()
    if step is None or result["child_workflow_id"] is not None:
        return original(result, completed_at_epoch_ms=completed_at_epoch_ms, owner_xid=owner_xid, **kwargs)
    completed_at = int(time.time() * 1000) if completed_at_epoch_ms is None else completed_at_epoch_ms
    owner = current_owner_xid(result["workflow_uuid"]) if owner_xid is None else owner_xid
    step.record = (result, completed_at, owner)
    return None


class LoopSteps:
    """The reads and writes of one system database's step checks and records, from the loop."""

    def __init__(self, records: StepRecords) -> None:
        self.records = records
        sys_db = records.sys_db
        self.postgres = LoopStatements(sys_db) if records.record_owned is not None else None
        self.sqlite = LoopSQLite(sys_db) if file_of(sys_db) is not None else None
        self.ahead = StepsAhead()
        self.sent = self.pooled = 0  # checks and records done from the loop / handed to DBOS's pool
        _all.add(self)

    @property
    def available(self) -> bool:
        return self.postgres is not None or self.sqlite is not None

    async def check(self, workflow_id: str, function_id: int, function_name: str) -> Any:
        """What DBOS's check returns (the recorded result or None) or raises; POOL: ask DBOS's in the pool."""
        if self.postgres is not None:
            return await self._check_postgres(self.postgres, workflow_id, function_id, function_name)
        check = self.records.check
        assert self.sqlite is not None
        sqlite, params = self.sqlite, check.params({"wf": workflow_id, "fid": function_id})
        try:
            rows = await when_free(lambda: sqlite.rows(check.sql, params))
        except Busy:
            self.pooled += 1
            return POOL
        self.sent += 1
        return self.records._checked(rows, workflow_id, function_id, function_name)

    async def _check_postgres(self, postgres: LoopStatements, workflow_id: str, function_id: int,
                              function_name: str) -> Any:
        """The check, unless the checks and records before it have answered it (dbos_steps_ahead.py)."""
        owner = current_owner_xid(workflow_id)
        if self.ahead.clear(workflow_id, owner, function_id):
            return None
        check = self.records.check_ahead
        rows = await postgres.rows(check.sql, check.params({"wf": workflow_id, "fid": function_id}))
        self.sent += 1
        answer = self.records._checked([row[:6] for row in rows], workflow_id, function_id, function_name)
        self.ahead.checked(workflow_id, owner, function_id, run=answer is None, highest=rows[0][6])
        return answer

    async def record(self, result: Any, completed_at: int, owner_xid: str | None,
                     rides: list[StreamWrite] | None = None) -> None:
        """DBOS's record of the step's `result`, written from the loop (or, the file locked, by DBOS in the
        pool), its errors DBOS's; on Postgres with the stream writes its step handed over (`rides`, Rides) in
        its statement (elsewhere, or another step's, each written just before it)."""
        records = self.records
        statement, values = records._record_values(result, completed_at, owner_xid, merged=self.postgres is not None)
        ride = None
        if rides:
            if self.postgres is not None and statement is records.record_owned:
                ride = joined(rides, values["wf"], values["fid"], values["owner"])
            if ride is None:
                await write_each(records.sys_db, rides)
        if self.postgres is not None:
            if ride is not None:
                writer = writer_for(records.sys_db)
                statement, values = writer.record_with(records), {**values, **writer.riding_values(ride)}
            rows = await self._record_postgres(self.postgres, statement, values, result, ride is not None)
            records._verify(statement, rows, result, completed_at)
            self.ahead.recorded(result["workflow_uuid"], values["owner"])
            if ride is not None:
                writer_for(records.sys_db).written(ride)
        elif not await self._record_in_file(statement, values, result, completed_at):
            self.pooled += 1
            await asyncio.to_thread(records.sys_db.record_operation_result, result,
                                    completed_at_epoch_ms=completed_at, owner_xid=owner_xid)
            return
        self.sent += 1
        DebugTriggers.debug_trigger_point(DebugTriggers.DEBUG_TRIGGER_STEP_COMMIT)

    @staticmethod
    async def _record_postgres(postgres: LoopStatements, statement: Any, values: dict[str, Any], result: Any,
                               streamed: bool) -> list[tuple[Any, ...]]:
        while True:
            try:
                return await postgres.rows(statement.sql, statement.params(values))
            except psycopg.errors.UniqueViolation as exc:
                if streamed and exc.diag.table_name == "streams":  # an offset taken meanwhile: as a write does
                    await asyncio.sleep(0.1)
                    continue
                raise DBOSStepNondeterminismError(result["workflow_uuid"], result["function_id"]) from exc

    async def _record_in_file(self, statement: Any, values: dict[str, Any], result: Any, completed_at: int) -> bool:
        """SQLite: the owner checked and the row inserted in one transaction of the loop's; False (nothing
        written) when another connection held the file's write lock at every try (`when_free`)."""
        assert self.sqlite is not None
        records = self.records
        try:
            await self.sqlite.written(
                lambda conn: records.write_record(on_driver(conn), statement, values, result, completed_at))
        except Busy:
            return False
        except sqlite3.IntegrityError as exc:
            if unique_violation(exc):
                raise DBOSStepNondeterminismError(result["workflow_uuid"], result["function_id"]) from exc
            raise
        return True


_all: weakref.WeakSet[LoopSteps] = weakref.WeakSet()
_installed: weakref.WeakKeyDictionary[SystemDatabase, LoopSteps] = weakref.WeakKeyDictionary()


def install(sys_db: SystemDatabase) -> bool:
    """The prepared check and record (dbos_step_records.install), and outermost around DBOS's check and
    record the layer that, asked on the loop, says what to send from there; False (nothing changed) for a
    database those were not written for, or installed already."""
    if not dbos_step_records.install(sys_db):
        return False
    records = dbos_step_records.installed(sys_db)
    assert records is not None
    swap(sys_db, "check_operation_execution", captured_check)
    swap(sys_db, "record_operation_result", captured_record)
    _installed[sys_db] = LoopSteps(records)
    return True


def install_launched() -> bool:
    """`install` on the system database of this process's launched DBOS."""
    return install(_get_dbos_instance()._sys_db)


def loop_steps(sys_db: SystemDatabase) -> LoopSteps | None:
    """What sends the step checks and records of an installed system database from the loop, else None."""
    return _installed.get(sys_db)


async def close_all() -> None:
    """Close the connections every system database's steps and stream writes opened on this loop (the
    worker stopping, before DBOS shuts down)."""
    for steps in list(_all):
        if steps.sent or steps.pooled:
            log.info("step checks and records: %d sent from the event loop, %d through DBOS's thread pool "
                     "(the database busy)", steps.sent, steps.pooled)
    await dbos_loop_notify.close_all()
    await dbos_loop_statements.close_all()
    dbos_loop_sqlite.close_all()
