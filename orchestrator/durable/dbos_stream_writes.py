"""A step's stream writes to DBOS's system database (the worker's StreamSink), as DBOS's `write_stream_async`
does from a step (the next free offset, then the check that this execution still owns the workflow, in one
transaction; the same serialisation; on Postgres the same coalesced NOTIFY), with statements compiled once
(dbos_step_records.Prepared), several values in one transaction and, on SQLite, every write waiting at once in
one transaction (`StreamWriter`), on the loop's own connection when the file is free (dbos_loop_sqlite.py).
On Postgres a write is one statement in autocommit (`StreamWriter.alone`), where a transaction sends BEGIN,
the INSERT, the owner's row locked and COMMIT, sent from the event loop (dbos_loop_statements.py). Both
leave DBOS's thread pool out, but for a write the loop could not make at once. What a step's end writes
rides with the step's record instead (`StepStreams.ride`, `Rides`, dbos_steps_on_loop.LoopSteps.record).
DBOS's private API, pinned with the rest (dbos_private.py PINNED_MINOR); tests/test_dbos_step_records.py
compares the rows with DBOS's own, tests/test_dbos_autocommit.py the statements sent and races.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import psycopg
import sqlalchemy as sa
from dbos import DBOS
from dbos._context import get_local_dbos_context, snapshot_step_context
from dbos._dbos import _get_dbos_instance
from dbos._error import DBOSWorkflowConflictIDError
from dbos._serialization import WorkflowSerializationFormat, serialize_value
from dbos._sys_db import SystemDatabase, _dbos_streams_channel, db_retry
from sqlalchemy.dialects import postgresql

from orchestrator.durable import dbos_loop_notify
from orchestrator.durable.dbos_loop_notify import LoopNotifier
from orchestrator.durable.dbos_loop_sqlite import Busy, LoopSQLite, file_of, unique_violation
from orchestrator.durable.dbos_loop_statements import LoopStatements
from orchestrator.durable.dbos_step_records import (
    Prepared,
    Run,
    StepRecords,
    autocommits,
    locked_owner,
    on_connection,
    on_driver,
    owner_statement,
)


def in_step() -> bool:
    """Whether a step of a workflow runs in this context (its writes are `StepStreams`' own, not DBOS's).
    Unlike `snapshot_step_context`, this takes no step id in a workflow's own code. A task started in a
    step shares the step's context, which says no once the step has ended."""
    ctx = get_local_dbos_context()
    return ctx is not None and ctx.is_step()


class StepStreams:
    """Appends to the streams of the workflow whose step is running (the worker's StreamSink)."""

    async def write(self, key: str, values: list[Any]) -> None:
        """Append `values` to the stream `key`, in order, in one transaction, and return once it is
        committed. Outside a step (the workflow's own code) this is DBOS's checkpointed write, one value
        at a time."""
        ctx = snapshot_step_context(reserve_sleep_id=False)
        if ctx is None or not ctx.is_step():
            for value in values:
                await DBOS.write_stream_async(key, value)
            return
        sys_db = _get_dbos_instance()._sys_db
        await writer_for(sys_db).write(_step_write(ctx, sys_db, key, values))

    def ride(self, key: str, values: list[Any]) -> bool:
        """Hand `values` to the running step's record, to be appended to the stream `key` with it (`Rides`);
        False, nothing taken, when the step's record cannot take them (then `write` them)."""
        rides = _rides.get()
        if rides is None:
            return False
        ctx = snapshot_step_context(reserve_sleep_id=False)
        if ctx is None or not ctx.is_step():
            return False
        sys_db = _get_dbos_instance()._sys_db
        if sys_db is not rides.sys_db:
            return False
        rides.writes.append(_step_write(ctx, sys_db, key, values))
        return True


def _step_write(ctx: Any, sys_db: SystemDatabase, key: str, values: list[Any]) -> StreamWrite:
    fmt = ctx.serialization_type or WorkflowSerializationFormat.DEFAULT
    return StreamWrite(ctx.workflow_id, ctx.function_id, ctx.owner_xid, key,
                       [serialize_value(value, fmt, sys_db.serializer) for value in values])


@dataclass
class StreamWrite:
    """One write of a step: its rows (serialised value, serialisation), all or none."""

    workflow_id: str
    function_id: int
    owner_xid: str | None  # the execution that may write (None: unchecked)
    key: str
    rows: list[tuple[str | None, str]]


@dataclass
class Rides:
    """The stream writes a step hands to its record (`StepStreams.ride`, from its end: stream_sink.py), which
    writes them in its own statement on Postgres (dbos_steps_on_loop.LoopSteps.record). A step's events are
    then committed with the record that says they were delivered, in one round trip where there were two."""

    sys_db: SystemDatabase
    writes: list[StreamWrite] = field(default_factory=list)

    def take(self) -> list[StreamWrite]:
        writes, self.writes = self.writes, []
        return writes

    async def write_alone(self) -> None:
        """What no record took, written as a step's writes are (a record DBOS made its own way)."""
        await write_each(self.sys_db, self.take())


_rides: ContextVar[Rides | None] = ContextVar("dbos_stream_rides", default=None)


@contextmanager
def riding(sys_db: SystemDatabase) -> Iterator[Rides]:
    """While a step runs whose record the loop writes on Postgres: the writes its end hands over
    (`StepStreams.ride`)."""
    rides = Rides(sys_db)
    token = _rides.set(rides)
    try:
        yield rides
    finally:
        _rides.reset(token)


class StreamWriter:
    """The stream writes of one system database, committed together: a write asked for while a
    transaction runs goes into the next one with every other write waiting then (on SQLite, where writes
    take the whole database in turn: one transaction for several debates' writes; on Postgres each write
    goes alone, as each locks its workflow's row until it commits: one statement in autocommit, `alone`).
    A write whose workflow another execution owns now is refused alone."""

    def __init__(self, sys_db: SystemDatabase, *, hooks: dict[str, Any] | None = None) -> None:
        """`hooks`: the `configure` and `reset` callbacks of the loop's connection pool (Postgres; a test
        traces the connections)."""
        self.sys_db = sys_db
        self.together = sys_db.engine.dialect.name == "sqlite"
        self._waiting: list[tuple[StreamWrite, asyncio.Future[None]]] = []
        self._draining: asyncio.Task[None] | None = None
        streams = sys_db.tables.streams
        wf = sa.bindparam("wf", type_=sa.Text)
        key = sa.bindparam("key", type_=sa.Text)
        next_offset = sa.select(sa.func.coalesce(sa.func.max(streams.c.offset) + 1, 0)).where(
            streams.c.workflow_uuid == wf, streams.c.key == key).scalar_subquery()
        self._insert = Prepared(sa.insert(streams).from_select(
            ["workflow_uuid", "function_id", "key", "value", "serialization", "offset"],
            sa.select(wf, sa.bindparam("fid", type_=sa.Integer), key, sa.bindparam("value", type_=sa.Text),
                      sa.bindparam("ser", type_=sa.Text), next_offset)), sys_db)
        self._owner = Prepared(owner_statement(sys_db, wf), sys_db)
        self._alone: dict[bool, Prepared] = {}  # by whether the owner is checked
        self._record_with: Prepared | None = None
        self._loop_sqlite = LoopSQLite(sys_db) if file_of(sys_db) is not None else None
        self.loop_statements: LoopStatements | None = None
        self.notifier: LoopNotifier | None = None  # Postgres with LISTEN/NOTIFY: a write's wake-up sent from the loop
        if autocommits(sys_db):
            self._alone = {checked: Prepared(alone_statement(sys_db, checked), sys_db) for checked in (False, True)}
            self.loop_statements = LoopStatements(sys_db, hooks=hooks)
            if getattr(sys_db, "use_listen_notify", False):
                # its own interval: DBOS's notifier is set to wake rarely (config.py DBOS_NOTIFIER_S)
                self.notifier = dbos_loop_notify.notifier(self.loop_statements, None)

    async def write(self, write: StreamWrite) -> None:
        if not self.together:
            if self._alone and write.rows:
                await self.alone(write)
                return
            refused = await asyncio.to_thread(db_retry(sys_db=self.sys_db)(self._commit), [write])
            if refused[0] is not None:
                raise refused[0]
            return
        done = asyncio.get_running_loop().create_future()
        self._waiting.append((write, done))
        if self._draining is None or self._draining.done():
            self._draining = asyncio.create_task(self._drain(), name="stream-writes")
        await asyncio.shield(done)  # a step cancelled meanwhile: its write still lands (as a thread's would)

    async def _drain(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting[:BATCH_MAX], self._waiting[BATCH_MAX:]
            writes = [write for write, _done in batch]
            try:
                refused = await self._commit_on_loop(writes)
                if refused is None:
                    refused = await asyncio.to_thread(db_retry(sys_db=self.sys_db)(self._commit), writes)
            except Exception as exc:
                refused = [exc] * len(batch)
            for (_write, done), error in zip(batch, refused, strict=True):
                if done.done():
                    continue
                if error is None:
                    done.set_result(None)
                else:
                    done.set_exception(error)

    def _commit(self, writes: list[StreamWrite]) -> list[Exception | None]:
        """Write `writes` in one transaction (blocking); for each, None or why it was refused."""
        while True:
            try:
                with self.sys_db.engine.begin() as c:
                    refused = self._write_all(on_connection(c), writes)
                break
            except sa.exc.IntegrityError as exc:  # another execution took an offset: only then try again
                if not self.sys_db._is_unique_constraint_violation(exc):
                    raise
                time.sleep(0.1)
        self._signal(writes, refused)
        return refused

    async def _commit_on_loop(self, writes: list[StreamWrite]) -> list[Exception | None] | None:
        """SQLite: `_commit` on the loop's own connection (dbos_loop_sqlite.py), when the file is free within a
        few short tries (`when_free`); None, with nothing written, when it is not (or an offset was taken
        meanwhile): the pool's then. The batches are written one at a time, so the order holds while one waits."""
        if self._loop_sqlite is None:
            return None
        try:
            refused = await self._loop_sqlite.written(lambda conn: self._write_all(on_driver(conn), writes))
        except Busy:
            return None
        except sqlite3.IntegrityError as exc:
            if unique_violation(exc):  # an offset taken meanwhile
                return None
            raise
        self._signal(writes, refused)
        return refused

    def _write_all(self, run: Run, writes: list[StreamWrite]) -> list[Exception | None]:
        """Each write's values, inside the caller's transaction (`run` a statement there), unless another
        execution owns its workflow now; for each, None or why it was refused."""
        refused: list[Exception | None] = [None] * len(writes)
        owners: dict[str, Any] = {}
        for i, write in enumerate(writes):
            if write.owner_xid is not None:
                if write.workflow_id not in owners:
                    found = run(self._owner, {"wf": write.workflow_id})
                    owners[write.workflow_id] = found[0][0] if found else None
                if owners[write.workflow_id] != write.owner_xid:
                    refused[i] = DBOSWorkflowConflictIDError(write.workflow_id)
                    continue
            for serialized, serialization in write.rows:
                run(self._insert, {"wf": write.workflow_id, "fid": write.function_id, "key": write.key,
                                   "value": serialized, "ser": serialization})
        return refused

    def _signal(self, writes: list[StreamWrite], refused: list[Exception | None]) -> None:
        for write, error in zip(writes, refused, strict=True):
            if error is None:
                self.sys_db._signal_notification(_dbos_streams_channel, f"{write.workflow_id}::{write.key}")

    # -- writes that ride with their step's record (Rides) ---------------------------------------------

    def record_with(self, records: StepRecords) -> Prepared:
        """Postgres: the step's record (`StepRecords.record_owned`) with a write's values (`alone_statement`,
        the owner checked) as a data-modifying CTE: one statement, one snapshot, one commit. Both lock the
        workflow's row and compare its owner, so both write or neither does."""
        if self._record_with is None:
            streamed = alone_statement(self.sys_db, checked=True).cte("streamed")
            self._record_with = Prepared(records.owned_insert.add_cte(streamed), self.sys_db)
        return self._record_with

    @staticmethod
    def riding_values(write: StreamWrite) -> dict[str, Any]:
        """`write`'s values for `record_with`, beside the record's own."""
        return {"key": write.key, "values": [serialized for serialized, _ in write.rows],
                "sers": [serialization for _, serialization in write.rows]}

    def written(self, write: StreamWrite) -> None:
        """Postgres: `write` committed (alone, or with its record): its readers woken."""
        if self.notifier is not None:
            self.notifier.signal(_dbos_streams_channel, f"{write.workflow_id}::{write.key}")

    async def alone(self, write: StreamWrite) -> None:
        """Postgres: `write` (one value or more) as one statement in autocommit, sent from the loop
        (dbos_loop_statements.py); raises DBOSWorkflowConflictIDError, having written nothing, when another
        execution owns the workflow."""
        assert self.loop_statements is not None
        statement = self._alone[write.owner_xid is not None]
        params = statement.params({"wf": write.workflow_id, "fid": write.function_id, "key": write.key,
                                   "owner": write.owner_xid, "values": [serialized for serialized, _ in write.rows],
                                   "sers": [serialization for _, serialization in write.rows]})
        while True:
            try:
                written = await self.loop_statements.rowcount(statement.sql, params)
                break
            except psycopg.errors.UniqueViolation:  # another execution took an offset: only then try again
                await asyncio.sleep(0.1)
        if written != len(write.rows):  # none: the owner check held them all back
            raise DBOSWorkflowConflictIDError(write.workflow_id)
        self.written(write)


def joined(writes: list[StreamWrite], workflow_id: str, function_id: int, owner_xid: str | None) -> StreamWrite | None:
    """`writes` as one write for the step (`workflow_id`, `function_id`) of the execution `owner_xid`, in
    order; None when one of them is another's, or of another stream."""
    if not writes or any((w.workflow_id, w.function_id, w.owner_xid, w.key)
                         != (workflow_id, function_id, owner_xid, writes[0].key) for w in writes):
        return None
    return StreamWrite(workflow_id, function_id, owner_xid, writes[0].key, [row for w in writes for row in w.rows])


def alone_statement(sys_db: SystemDatabase, checked: bool) -> sa.Executable:
    """Postgres: INSERT … SELECT of a write's values (two arrays, unnested in order) at the stream's next
    offsets, if `checked` only when the workflow's owner, its row locked FOR NO KEY UPDATE, is :owner.
    As in the transaction this replaces, the lock comes first (the one-time filter's InitPlan) and is held
    to the commit. The next offset is read in the statement's snapshot, taken before any wait: a write to
    the same stream committed meanwhile makes this one collide on the offset's key, and try again (as
    DBOS's does), never write over it. The StreamSink writes one workflow's stream a write at a time."""
    streams = sys_db.tables.streams
    wf = sa.bindparam("wf", type_=sa.Text)
    key = sa.bindparam("key", type_=sa.Text)
    texts = postgresql.ARRAY(sa.Text)
    rows = sa.func.unnest(sa.bindparam("values", type_=texts), sa.bindparam("sers", type_=texts)).table_valued(
        "value", "serialization", with_ordinality="n").render_derived()
    last = sa.select(sa.func.coalesce(sa.func.max(streams.c.offset), -1)).where(
        streams.c.workflow_uuid == wf, streams.c.key == key).scalar_subquery()
    values = sa.select(wf, sa.bindparam("fid", type_=sa.Integer), key, rows.c.value, rows.c.serialization,
                       last + rows.c.n).select_from(rows)
    if checked:
        values = values.where(locked_owner(sys_db, wf) == sa.bindparam("owner", type_=sa.Text))
    return sa.insert(streams).from_select(["workflow_uuid", "function_id", "key", "value", "serialization", "offset"],
                                          values)


BATCH_MAX = 64  # writes in one transaction at most
_writers: weakref.WeakKeyDictionary[SystemDatabase, StreamWriter] = weakref.WeakKeyDictionary()


async def write_each(sys_db: SystemDatabase, writes: list[StreamWrite]) -> None:
    """`writes` in order, each as a step's write is (`StreamWriter.write`)."""
    writer = writer_for(sys_db)
    for write in writes:
        await writer.write(write)


def writer_for(sys_db: SystemDatabase) -> StreamWriter:
    """The stream writer of `sys_db` (one a system database)."""
    writer = _writers.get(sys_db)
    if writer is None:
        writer = _writers[sys_db] = StreamWriter(sys_db)
    return writer
