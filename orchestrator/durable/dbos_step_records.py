"""A step's checkpoint in DBOS's system database (DBOS's check before a step runs and its record after),
with statements compiled once (`Prepared`, also used by dbos_stream_writes.py).

DBOS builds both anew for every step: two SELECTs (the workflow's status, the step's row) and an
ownership check plus an INSERT … ON CONFLICT, each a SQLAlchemy construct coerced, keyed and looked up
in the compiled cache: ~2 ms of CPU per trivial step on SQLite, most of it building SQL. `install` swaps
a system database's two `_txn` methods (every step, send, sleep and event path calls them, with the
connection of its own transaction) for ones that run the same SQL compiled once, through the driver:
the check is one SELECT (the status joined to the step's row), the record the same ownership check and
insert. Retries, transactions and the ownership keys stay DBOS's: only the SQL's construction changes.

Only a plain (unsharded) SQLite or Postgres system database is swapped, and only for a connection
(a Session, which some DBOS paths pass, keeps DBOS's own). This is DBOS's private API, pinned with the
rest (dbos_private.py PINNED_MINOR); tests/test_dbos_step_records.py compares the rows and errors of
both versions on a real database.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from dbos._context import current_owner_xid
from dbos._dbos import _get_dbos_instance
from dbos._error import (
    DBOSStepNondeterminismError,
    DBOSUnexpectedStepError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
)
from dbos._schemas import SCHEMA_PLACEHOLDER
from dbos._sys_db import SystemDatabase, WorkflowStatusString
from dbos._sys_db_postgres import PostgresSystemDatabase
from dbos._sys_db_sqlite import SQLiteSystemDatabase
from sqlalchemy.exc import DBAPIError

PLAIN = (SQLiteSystemDatabase, PostgresSystemDatabase)  # not a sharded subclass: its keys are in every statement
CANCELLED = WorkflowStatusString.CANCELLED.value


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
        for name, bind in compiled.binds.items():
            processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if processor is not None:
                self._processors[name] = processor
            if not bind.required and bind.value is not None:
                self._constants[name] = bind.value
        self._order = list(compiled.positiontup or []) if compiled.positional else None

    def run(self, conn: sa.Connection, values: dict[str, Any]) -> sa.CursorResult[Any]:
        params = {name: self._processors[name](value) if name in self._processors else value
                  for name, value in {**self._constants, **values}.items()}
        if self._order is not None:
            return conn.exec_driver_sql(self.sql, tuple(params[name] for name in self._order))
        return conn.exec_driver_sql(self.sql, params)


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
        self.owner = Prepared(owner_statement(sys_db, wf), sys_db)
        columns = ("function_name", "started_at_epoch_ms", "completed_at_epoch_ms", "output", "error",
                   "child_workflow_id", "serialization", "application_name")
        insert = sys_db.dialect.insert(outputs).values(
            workflow_uuid=wf, function_id=fid, retention_timestamp=sys_db._now_ms_sql(),
            **{column: sa.bindparam(column, type_=outputs.c[column].type) for column in columns})
        self.record = Prepared(
            insert.on_conflict_do_update(index_elements=["workflow_uuid", "function_id"],
                                         set_={"completed_at_epoch_ms": outputs.c.completed_at_epoch_ms})
            .returning(outputs.c.completed_at_epoch_ms), sys_db)

    def prepared_for(self, conn: Any) -> bool:
        """A connection of this database's engine (a Session, or another driver's, keeps DBOS's path)."""
        return isinstance(conn, sa.Connection) and conn.dialect is self.sys_db.engine.dialect

    def check_txn(self, original: Any, workflow_id: str, function_id: int, function_name: str,
                  conn: Any) -> Any:
        """DBOS's `_check_operation_execution_txn`: the step's recorded result, or None to run it."""
        if not self.prepared_for(conn):
            return original(workflow_id, function_id, function_name, conn)
        rows = self.check.run(conn, {"wf": workflow_id, "fid": function_id}).all()
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
        assert result["error"] is None or result["output"] is None, "Only one of error or output can be set"
        workflow_id = result["workflow_uuid"]
        if owner_xid is None:
            owner_xid = current_owner_xid(workflow_id)
        if owner_xid is not None and self.owner.run(conn, {"wf": workflow_id}).scalar() != owner_xid:
            raise DBOSWorkflowConflictIDError(workflow_id)
        try:
            rows = self.record.run(conn, {
                "wf": workflow_id, "fid": result["function_id"], "function_name": result["function_name"],
                "started_at_epoch_ms": result["started_at_epoch_ms"], "completed_at_epoch_ms": completed_at_epoch_ms,
                "output": result["output"], "error": result["error"],
                "child_workflow_id": result["child_workflow_id"], "serialization": result["serialization"],
                "application_name": self.sys_db.app_name}).all()
        except DBAPIError as exc:
            if self.sys_db._is_unique_constraint_violation(exc):
                raise DBOSStepNondeterminismError(workflow_id, result["function_id"]) from exc
            raise
        if rows and (rows[0][0] is None or int(rows[0][0]) != completed_at_epoch_ms):
            raise DBOSStepNondeterminismError(workflow_id, result["function_id"])
        return None


def owner_statement(sys_db: SystemDatabase, wf: sa.BindParameter[str]) -> sa.Executable:
    """DBOS's ownership check of a workflow's row, locking it for the transaction: on SQLite a no-op
    UPDATE (a write, so pysqlite opens the transaction with it), on Postgres FOR NO KEY UPDATE."""
    status = sys_db.tables.workflow_status
    if sys_db.engine.dialect.name == "sqlite":
        return (sa.update(status).where(status.c.workflow_uuid == wf)
                .values(owner_xid=status.c.owner_xid).returning(status.c.owner_xid))
    return sa.select(status.c.owner_xid).where(status.c.workflow_uuid == wf).with_for_update(key_share=True)


def install(sys_db: SystemDatabase) -> bool:
    """Swap the system database's step check and record for the prepared ones; False (nothing changed)
    for a database this was not written for. Idempotent."""
    if type(sys_db) not in PLAIN or isinstance(getattr(sys_db, "_check_operation_execution_txn", None), _Swapped):
        return False
    records = StepRecords(sys_db)
    sys_db._check_operation_execution_txn = _Swapped(records.check_txn, sys_db._check_operation_execution_txn)  # type: ignore[method-assign]
    sys_db._record_operation_result_txn = _Swapped(records.record_txn, sys_db._record_operation_result_txn)  # type: ignore[method-assign]
    return True


def install_launched() -> bool:
    """`install` on the system database of this process's launched DBOS."""
    return install(_get_dbos_instance()._sys_db)


class _Swapped:
    """One of DBOS's methods replaced on an instance, the original kept for what the new one leaves to it."""

    def __init__(self, fast: Any, original: Any) -> None:
        self._fast = fast
        self.original = original

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fast(self.original, *args, **kwargs)
