"""A step's checkpoint in DBOS's system database (DBOS's check before a step runs and its record after),
with statements compiled once (`Prepared`, also used by dbos_stream_writes.py).

DBOS builds both anew for every step: two SELECTs (the workflow's status, the step's row) and an
ownership check plus an INSERT … ON CONFLICT, each a SQLAlchemy construct coerced, keyed and looked up
in the compiled cache: ~2 ms of CPU per trivial step on SQLite, most of it building SQL. `install` swaps
a system database's two `_txn` methods (every step, send, sleep and event path calls them, with the
connection of its own transaction) for ones that run the same SQL compiled once, through the driver:
the check is one SELECT (the status joined to the step's row), the record the same ownership check and
insert. Retries, transactions and the ownership keys stay DBOS's: only the SQL's construction changes.

On Postgres DBOS puts a step's check and its record in a transaction each: BEGIN, the SELECT, COMMIT
(3 statements for one read) and BEGIN, the owner's row locked, the INSERT, COMMIT (4). There `install`
also swaps `check_operation_execution` and `record_operation_result` (DBOS's retry kept around each)
for one statement each on a connection in autocommit: the check's SELECT, and the record's ownership
check and insert merged (`record_owned`, see the comment there). A step sends them from the event loop
(dbos_steps_on_loop.py, which installs the layer for it over these, run by dbos_step_hops.py), not from
DBOS's thread pool. SQLite keeps DBOS's
transactions: pysqlite sends no BEGIN for a read, and a statement costs microseconds there; a step runs them
on the loop's own connection when the file is free (dbos_loop_sqlite.py).

Only a plain (unsharded) SQLite or Postgres system database is swapped, and only for a connection
(a Session, which some DBOS paths pass, keeps DBOS's own). This is DBOS's private API, pinned with the
rest (dbos_private.py PINNED_MINOR); tests/test_dbos_step_records.py compares the rows and errors of
both versions on a real database, tests/test_dbos_autocommit.py the statements sent and races,
tests/test_dbos_steps_on_loop.py the steps sent from the loop.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from dbos._context import current_owner_xid
from dbos._debug_trigger import DebugTriggers
from dbos._error import (
    DBOSStepNondeterminismError,
    DBOSUnexpectedStepError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
)
from dbos._schemas import SCHEMA_PLACEHOLDER
from dbos._sys_db import SystemDatabase, WorkflowStatusString, db_retry
from dbos._sys_db_postgres import PostgresSystemDatabase
from dbos._sys_db_sqlite import SQLiteSystemDatabase
from sqlalchemy.exc import DBAPIError

PLAIN = (SQLiteSystemDatabase, PostgresSystemDatabase)  # not a sharded subclass: its keys are in every statement
CANCELLED = WorkflowStatusString.CANCELLED.value
RECORDED = ("function_name", "started_at_epoch_ms", "completed_at_epoch_ms", "output", "error",
            "child_workflow_id", "serialization", "application_name")  # a step row's columns set from its result


class Prepared:
    """A statement compiled once for a system database's engine (its schema rendered in), executed by
    the driver with the values of its named bind parameters, each through its type's bind processor, and
    the constants the compiler bound (a function's arguments), as DBOS's `_execute_prepared` does."""

    def __init__(self, statement: sa.Executable, sys_db: SystemDatabase) -> None:
        dialect = sys_db.engine.dialect
        compiled = statement.compile(dialect=dialect, schema_translate_map={SCHEMA_PLACEHOLDER: sys_db.schema},
                                     render_schema_translate=True)
        self.sql = str(compiled)
        self._processors: dict[str, Any] = {}
        self._constants: dict[str, Any] = {}
        rendered = set(compiled.bind_names.values())  # `binds` also keys an anonymous one by its unrendered name
        for name, bind in compiled.binds.items():
            if name not in rendered:
                continue
            processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if processor is not None:
                self._processors[name] = processor
            if not bind.required and bind.value is not None:
                self._constants[name] = bind.value
        self._order = list(compiled.positiontup or []) if compiled.positional else None

    def run(self, conn: sa.Connection, values: dict[str, Any]) -> sa.CursorResult[Any]:
        return conn.exec_driver_sql(self.sql, self.params(values))

    def params(self, values: dict[str, Any]) -> dict[str, Any] | tuple[Any, ...]:
        """What the driver is given for `values`: each through its type's bind processor, the constants added."""
        params = {name: self._processors[name](value) if name in self._processors else value
                  for name, value in {**self._constants, **values}.items()}
        if self._order is not None:
            return tuple(params[name] for name in self._order)
        return params


Run = Callable[[Prepared, dict[str, Any]], Sequence[Any]]  # a prepared statement run, its rows given back


def on_connection(conn: sa.Connection) -> Run:
    """Statements run on a connection of DBOS's engine."""
    def run(statement: Prepared, values: dict[str, Any]) -> Sequence[Any]:
        result = statement.run(conn, values)
        return result.all() if result.returns_rows else []
    return run


def on_driver(conn: Any) -> Run:
    """Statements run on a DB-API connection of the driver's own (the loop's sqlite3 connection)."""
    return lambda statement, values: conn.execute(statement.sql, statement.params(values)).fetchall()


def autocommits(sys_db: SystemDatabase) -> bool:
    """A plain Postgres system database through psycopg, where a step's check, record and stream write
    are one statement each in autocommit (not CockroachDB: its locking and isolation differ)."""
    return (type(sys_db) is PostgresSystemDatabase and not sys_db._is_cockroach
            and sys_db.engine.dialect.driver == "psycopg")


@contextmanager
def autocommit(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A pooled connection of `engine` on which each statement commits by itself: no BEGIN, no COMMIT.
    psycopg's own flag, set and reset here, costs no statement either way; SQLAlchemy's AUTOCOMMIT
    option cost ~20 µs of CPU more per use, and its reset made the connection's later transactions
    open with an explicit isolation level (`BEGIN ISOLATION LEVEL READ COMMITTED`)."""
    with engine.connect() as conn:
        driver: Any = conn.connection.dbapi_connection
        driver.autocommit = True
        try:
            yield conn
        finally:
            if not driver.closed and not driver.broken:  # else the pool discards it
                driver.autocommit = False


class StepRecords:
    """The prepared check and record of one system database."""

    def __init__(self, sys_db: SystemDatabase) -> None:
        self.sys_db = sys_db
        status, outputs = sys_db.tables.workflow_status, sys_db.tables.operation_outputs
        wf = sa.bindparam("wf", type_=sa.Text)
        fid = sa.bindparam("fid", type_=sa.Integer)
        step_row = sa.and_(outputs.c.workflow_uuid == status.c.workflow_uuid, outputs.c.function_id == fid)
        self.check = Prepared(
            sa.select(status.c.status, outputs.c.output, outputs.c.error, outputs.c.function_name,
                      outputs.c.child_workflow_id, outputs.c.serialization)
            .select_from(status.outerjoin(outputs, step_row)).where(status.c.workflow_uuid == wf), sys_db)
        # the check and the highest step id recorded for the workflow (dbos_steps_ahead.py)
        highest = sa.select(sa.func.max(outputs.c.function_id)).where(outputs.c.workflow_uuid == wf).scalar_subquery()
        self.check_ahead = Prepared(
            sa.select(status.c.status, outputs.c.output, outputs.c.error, outputs.c.function_name,
                      outputs.c.child_workflow_id, outputs.c.serialization, highest)
            .select_from(status.outerjoin(outputs, step_row)).where(status.c.workflow_uuid == wf), sys_db)
        self.owner = Prepared(owner_statement(sys_db, wf), sys_db)
        recorded = {column: sa.bindparam(column, type_=outputs.c[column].type) for column in RECORDED}
        self.record = Prepared(keep_on_conflict(sys_db.dialect.insert(outputs).values(
            workflow_uuid=wf, function_id=fid, retention_timestamp=sys_db._now_ms_sql(), **recorded), sys_db), sys_db)
        self.record_owned: Prepared | None = None
        self.owned_insert: Any = None  # record_owned's statement, before compiling (a stream write joins it)
        if autocommits(sys_db):
            # The ownership check and the insert in one statement: the SELECT yields the row to insert only
            # if the workflow's owner, read FOR NO KEY UPDATE, is :owner. The lock is taken first (an InitPlan
            # under the SELECT's one-time filter) and held to the statement's commit; when another transaction
            # holds it, READ COMMITTED waits, then re-reads the row's newest version (EvalPlanQual), so the owner
            # compared is the latest committed one, as DBOS's SELECT … FOR NO KEY UPDATE finds it. The ON
            # CONFLICT arbiter sees the newest rows, not the statement's snapshot, as DBOS's INSERT (a later
            # statement, a later snapshot) does. No row comes back when the owner was another, or none.
            owned = sa.select(wf, fid, *recorded.values(), sys_db._now_ms_sql()).where(
                locked_owner(sys_db, wf) == sa.bindparam("owner", type_=sa.Text))
            self.owned_insert = keep_on_conflict(sys_db.dialect.insert(outputs).from_select(
                ["workflow_uuid", "function_id", *RECORDED, "retention_timestamp"], owned), sys_db)
            self.record_owned = Prepared(self.owned_insert, sys_db)
        self.record_alone: Callable[..., None] = db_retry(sys_db=sys_db)(self._record_alone)

    def prepared_for(self, conn: Any) -> bool:
        """A connection of this database's engine (a Session, or another driver's, keeps DBOS's path)."""
        return isinstance(conn, sa.Connection) and conn.dialect is self.sys_db.engine.dialect

    def check_txn(self, original: Any, workflow_id: str, function_id: int, function_name: str,
                  conn: Any) -> Any:
        """DBOS's `_check_operation_execution_txn`: the step's recorded result, or None to run it."""
        if not self.prepared_for(conn):
            return original(workflow_id, function_id, function_name, conn)
        return self._check(conn, workflow_id, function_id, function_name)

    def check_alone(self, _original: Any, workflow_id: str, function_id: int, function_name: str, *,
                    owner_key: str | None = None) -> Any:
        """DBOS's `check_operation_execution` on Postgres (`install` puts DBOS's retry around it): the
        prepared check, one SELECT in autocommit, where DBOS's runs in a transaction of its own."""
        with self.sys_db._own_key(workflow_id, key=owner_key), autocommit(self.sys_db.engine) as c:
            return self._check(c, workflow_id, function_id, function_name)

    def _check(self, conn: sa.Connection, workflow_id: str, function_id: int, function_name: str) -> Any:
        rows = self.check.run(conn, {"wf": workflow_id, "fid": function_id}).all()
        return self._checked(rows, workflow_id, function_id, function_name)

    @staticmethod
    def _checked(rows: Sequence[Any], workflow_id: str, function_id: int, function_name: str) -> Any:
        """What DBOS's check makes of the row found: the recorded result, None (run the step), or an error."""
        assert rows, f"Error: Workflow {workflow_id} does not exist"
        state, output, error, recorded_name, child_workflow_id, serialization = rows[0]
        if state == CANCELLED:
            raise DBOSWorkflowCancelledError(f"Workflow {workflow_id} is cancelled. Aborting function.")
        if recorded_name is None:  # no row for this step (function_name is NOT NULL in a recorded one)
            return None
        if function_name != recorded_name:
            raise DBOSUnexpectedStepError(workflow_id=workflow_id, step_id=function_id,
                                          expected_name=function_name, recorded_name=recorded_name)
        return {"output": output, "error": error, "serialization": serialization,
                "child_workflow_id": child_workflow_id, "child_shard_key": None}

    def record_txn(self, original: Any, result: Any, completed_at_epoch_ms: int, conn: Any, *,
                   owner_xid: str | None = None, child_values: dict[str, Any] | None = None) -> None:
        """DBOS's `_record_operation_result_txn`: the step's row, if this execution still owns the workflow."""
        if not self.prepared_for(conn) or child_values:
            return original(result, completed_at_epoch_ms, conn, owner_xid=owner_xid, child_values=child_values)
        self._record(conn, result, completed_at_epoch_ms, owner_xid, merged=False)
        return None

    def record_result(self, original: Any, result: Any, *, completed_at_epoch_ms: int | None = None,
                      owner_xid: str | None = None, owner_key: str | None = None) -> None:
        """DBOS's `record_operation_result` on Postgres: the record as one statement in autocommit
        (`record_owned`) where DBOS's runs two in a transaction, within DBOS's retry (`record_alone`)."""
        # outside the retry, as DBOS's: a retry carries the same time, so the row it may find is its own
        completed_at = int(time.time() * 1000) if completed_at_epoch_ms is None else completed_at_epoch_ms
        if self.sys_db._child_values(result["child_workflow_id"]):
            return original(result, completed_at_epoch_ms=completed_at, owner_xid=owner_xid, owner_key=owner_key)
        self.record_alone(result, completed_at, owner_xid, owner_key)
        return None

    def _record_alone(self, result: Any, completed_at: int, owner_xid: str | None, owner_key: str | None) -> None:
        with self.sys_db._own_key(result["workflow_uuid"], key=owner_key), autocommit(self.sys_db.engine) as c:
            self._record(c, result, completed_at, owner_xid, merged=True)
        DebugTriggers.debug_trigger_point(DebugTriggers.DEBUG_TRIGGER_STEP_COMMIT)

    def _record(self, conn: sa.Connection, result: Any, completed_at: int, owner_xid: str | None, *,
                merged: bool) -> None:
        statement, values = self._record_values(result, completed_at, owner_xid, merged=merged)
        try:
            self.write_record(on_connection(conn), statement, values, result, completed_at)
        except DBAPIError as exc:
            if self.sys_db._is_unique_constraint_violation(exc):
                raise DBOSStepNondeterminismError(result["workflow_uuid"], result["function_id"]) from exc
            raise

    def write_record(self, run: Run, statement: Prepared, values: dict[str, Any], result: Any,
                     completed_at: int) -> None:
        """The record (`_record_values`) inside the caller's transaction, its statements run by `run`: the
        owner checked first unless the statement checks it, the insert, and what it gave back verified."""
        if statement is self.record and values["owner"] is not None:
            found = run(self.owner, {"wf": values["wf"]})
            if not found or found[0][0] != values["owner"]:
                raise DBOSWorkflowConflictIDError(values["wf"])
        self._verify(statement, run(statement, values), result, completed_at)

    def _record_values(self, result: Any, completed_at: int, owner_xid: str | None, *,
                       merged: bool) -> tuple[Prepared, dict[str, Any]]:
        """The record's statement and values: the owner checked in it (`merged`, Postgres) or before it."""
        assert result["error"] is None or result["output"] is None, "Only one of error or output can be set"
        workflow_id = result["workflow_uuid"]
        if owner_xid is None:
            owner_xid = current_owner_xid(workflow_id)
        values = {
            "wf": workflow_id, "fid": result["function_id"], "function_name": result["function_name"],
            "started_at_epoch_ms": result["started_at_epoch_ms"], "completed_at_epoch_ms": completed_at,
            "output": result["output"], "error": result["error"], "child_workflow_id": result["child_workflow_id"],
            "serialization": result["serialization"], "application_name": self.sys_db.app_name,
            "owner": owner_xid}
        if owner_xid is not None and merged:
            assert self.record_owned is not None
            return self.record_owned, values
        return self.record, values

    def _verify(self, statement: Prepared, rows: Sequence[Any], result: Any, completed_at: int) -> None:
        """What the insert gave back says it wrote this record (or found this very one there). Only a
        statement that checks the owner (any but `record`) gives back nothing: the owner was another."""
        if statement is not self.record and not rows:
            raise DBOSWorkflowConflictIDError(result["workflow_uuid"])
        if rows and (rows[0][0] is None or int(rows[0][0]) != completed_at):
            raise DBOSStepNondeterminismError(result["workflow_uuid"], result["function_id"])


def keep_on_conflict(insert: Any, sys_db: SystemDatabase) -> sa.Executable:
    """DBOS's step insert's conflict clause: a row already there stays, and its completion time comes back."""
    outputs = sys_db.tables.operation_outputs
    return (insert.on_conflict_do_update(index_elements=["workflow_uuid", "function_id"],
                                         set_={"completed_at_epoch_ms": outputs.c.completed_at_epoch_ms})
            .returning(outputs.c.completed_at_epoch_ms))


def owner_statement(sys_db: SystemDatabase, wf: sa.BindParameter[str]) -> sa.Executable:
    """DBOS's ownership check of a workflow's row, locking it for the transaction: on SQLite a no-op
    UPDATE (a write, so pysqlite opens the transaction with it), on Postgres FOR NO KEY UPDATE."""
    status = sys_db.tables.workflow_status
    if sys_db.engine.dialect.name == "sqlite":
        return (sa.update(status).where(status.c.workflow_uuid == wf)
                .values(owner_xid=status.c.owner_xid).returning(status.c.owner_xid))
    return sa.select(status.c.owner_xid).where(status.c.workflow_uuid == wf).with_for_update(key_share=True)


def locked_owner(sys_db: SystemDatabase, wf: sa.BindParameter[str]) -> sa.ScalarSelect[Any]:
    """Postgres: the workflow's owner as a scalar subquery, its row locked FOR NO KEY UPDATE (NULL: no row)."""
    status = sys_db.tables.workflow_status
    return (sa.select(status.c.owner_xid).where(status.c.workflow_uuid == wf)
            .with_for_update(key_share=True).scalar_subquery())


def install(sys_db: SystemDatabase) -> bool:
    """Swap the system database's step check and record for the prepared ones (on Postgres, also the
    transactions around them, for one statement each in autocommit); False (nothing changed) for a
    database this was not written for. Idempotent."""
    if type(sys_db) not in PLAIN or isinstance(getattr(sys_db, "_check_operation_execution_txn", None), _Swapped):
        return False
    records = StepRecords(sys_db)
    swap(sys_db, "_check_operation_execution_txn", records.check_txn)
    swap(sys_db, "_record_operation_result_txn", records.record_txn)
    if records.record_owned is not None:
        swap(sys_db, "check_operation_execution", db_retry(sys_db=sys_db)(records.check_alone))
        swap(sys_db, "record_operation_result", records.record_result)
    _installed[sys_db] = records
    return True


def installed(sys_db: SystemDatabase) -> StepRecords | None:
    """The prepared check and record `install` put on `sys_db`, else None."""
    return _installed.get(sys_db)


_installed: weakref.WeakKeyDictionary[SystemDatabase, StepRecords] = weakref.WeakKeyDictionary()


class _Swapped:
    """One of DBOS's methods replaced on an instance, the original kept for what the new one leaves to it."""

    def __init__(self, fast: Any, original: Any) -> None:
        self._fast = fast
        self.original = original

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fast(self.original, *args, **kwargs)


def swap(sys_db: SystemDatabase, name: str, fast: Any) -> None:
    """Replace the method `name` of `sys_db` by `fast`, which is given the one it replaces first."""
    setattr(sys_db, name, _Swapped(fast, getattr(sys_db, name)))
