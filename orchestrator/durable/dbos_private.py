"""The one use this program makes of DBOS's private API, read-only: a front's batched reads of many
workflows' streams (`SystemStreams`, used by stream_reads.py). DBOS's public reader follows one stream at
a time, and a front follows every live debate's.

What it reaches: a client's system database (its engine and tables), the stream listeners of its
notification thread, the deserialiser of stored values, the close marker of a stream, and which
statuses are still running. Nothing here writes. tests/test_dbos_private.py runs each call against the
installed DBOS on real SQLite and Postgres system databases: a DBOS upgrade runs that test first.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from dbos import DBOSClient
from dbos._serialization import deserialize_value
from dbos._sys_db import (
    SystemDatabase,
    is_serialized_stream_closed_sentinel,
    workflow_is_active,
)
from dbos._utils import LoopAwareEvent


@dataclass
class StreamChunk:
    """What one read of a stream found: its workflow's status (None: no such workflow), the values
    written from the offset on, deserialised, and whether the stream's close marker came after them."""

    status: str | None
    values: list[Any] = field(default_factory=list)
    closed: bool = False


class StreamListener:
    """Set by DBOS's notification listener when the stream is written (NOTIFY on Postgres, polling on SQLite)."""

    def __init__(self, event: LoopAwareEvent) -> None:
        self._event = event

    def clear(self) -> None:
        """Forget earlier writes: a write after this sets it again."""
        self._event.clear()

    async def wait(self, seconds: float) -> bool:
        """Until a write or `seconds` have passed; True when a write set it (it may also wake spuriously)."""
        return await self._event.wait_async(timeout=seconds)

    def call_once_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` on the running loop once the listener is set: soon when it is set now, else at
        the next write (DBOS's listener thread hands it to this loop, as it wakes an awaiting reader, but
        without a timer or a task). Once only; returns what takes it back before it is called."""
        loop = asyncio.get_running_loop()
        event = self._event
        with event._waiters_lock:
            if not event.is_set():
                future: asyncio.Future[None] = loop.create_future()
                waiter = (loop, future)
                event._waiters.add(waiter)
            else:
                future = None
        if future is None:
            return loop.call_soon(callback).cancel
        future.add_done_callback(lambda done: None if done.cancelled() else callback())

        def take_back() -> None:
            with event._waiters_lock:
                event._waiters.discard(waiter)
            future.cancel()

        return take_back


class SystemStreams:
    """The streams of a DBOS client's system database, read directly."""

    def __init__(self, client: DBOSClient) -> None:
        self._sys_db: SystemDatabase = client._sys_db
        self._many: dict[str, sa.Select[Any]] = {}  # per stream key: the statement of read_many, built once
        self._changed: dict[str, sa.Select[Any]] = {}  # per stream key: the statement of changed_since
        self._top = sa.select(sa.func.max(sa.literal_column("rowid", sa.Integer))).select_from(
            self._sys_db.tables.streams)

    @property
    def notified(self) -> bool:
        """Writes wake listeners by notification (Postgres LISTEN/NOTIFY), not by DBOS's polling thread."""
        return self._sys_db.engine.dialect.name == "postgresql"

    @contextmanager
    def listening(self, workflow_id: str, key: str) -> Iterator[StreamListener]:
        """A listener on the stream `key` of `workflow_id`; enter it before the first read, so a write
        between a read and the wait is not lost."""
        event, payload = self._sys_db.register_stream_listener(workflow_id, key)
        try:
            yield StreamListener(event)
        finally:
            self._sys_db.unregister_stream_listener(payload, event)

    def read(self, workflow_id: str, key: str, offset: int, limit: int) -> StreamChunk:
        """Up to `limit` values of the stream from `offset`, and the workflow's status, in one query
        (blocking: call it from a worker thread): `read_many` of one stream."""
        return self.read_many(key, {workflow_id: offset}, limit)[workflow_id]

    def read_many(self, key: str, offsets: dict[str, int], limit: int) -> dict[str, StreamChunk]:
        """`read` of many workflows' streams `key` at once, each from its own offset: one statement
        (blocking: call it from a worker thread). A workflow that does not exist gets status None."""
        if not offsets:
            return {}
        with self._sys_db.engine.begin() as c:
            rows = c.execute(self._many_statement(key), {"want": _wanted(offsets), "limit": limit}).all()
        return self._chunks(offsets, rows)

    def _chunks(self, offsets: dict[str, int], rows: Sequence[Sequence[Any]]) -> dict[str, StreamChunk]:
        chunks: dict[str, StreamChunk] = {}
        for workflow_id, status, offset, serialized, serialization in rows:
            chunk = chunks.get(workflow_id)
            if chunk is None:
                chunk = chunks[workflow_id] = StreamChunk(status)
            if offset is None or chunk.closed or offset != offsets[workflow_id] + len(chunk.values):
                continue  # nothing at the offset, or past the close marker, or past a gap
            if is_serialized_stream_closed_sentinel(serialized, serialization):
                chunk.closed = True
            else:
                chunk.values.append(deserialize_value(serialized, serialization, self._sys_db.serializer))
        return {workflow_id: chunks.get(workflow_id, StreamChunk(None)) for workflow_id in offsets}

    def changed_since(self, key: str, since: int | None) -> tuple[dict[str, int], int]:
        """SQLite only: the workflows whose stream `key` has rows of rowid above `since`, each with its
        highest, and the table's highest rowid (None: only that). SQLite commits one writer at a time and
        gives a row the highest rowid + 1, so every row at or below the highest seen was committed by then
        (a deletion of the highest rows, or a VACUUM, may reuse rowids: a reader reads a quiet stream anyway
        now and then). Blocking: call it from a worker thread."""
        with self._sys_db.engine.begin() as c:
            top = c.execute(self._top).scalar()
            if since is None or top is None or top <= since:
                return {}, -1 if top is None else top
            rows = c.execute(self._changed_statement(key), {"since": since}).all()
        return {workflow_id: rowid for workflow_id, rowid in rows}, top

    def _changed_statement(self, key: str) -> sa.Select[Any]:
        statement = self._changed.get(key)
        if statement is None:
            streams = self._sys_db.tables.streams
            rowid = sa.literal_column("rowid", sa.Integer)
            statement = self._changed[key] = (
                sa.select(streams.c.workflow_uuid, sa.func.max(rowid))
                .where(rowid > sa.bindparam("since", type_=sa.Integer), streams.c.key == key)
                .group_by(streams.c.workflow_uuid))
        return statement

    def _many_statement(self, key: str) -> sa.Select[Any]:
        """SELECT each wanted workflow's status and its stream's rows from its offset (at most :limit),
        the wanted (workflow, offset) pairs passed as one JSON parameter, so the statement's text is
        the same for any number of streams and is compiled once."""
        statement = self._many.get(key)
        if statement is None:
            wanted = sa.bindparam("want", type_=sa.Text)
            limit = sa.bindparam("limit", type_=sa.Integer)
            postgres = self._sys_db.engine.dialect.name == "postgresql"
            statement = self._many[key] = (self._many_lookups if postgres else self._many_join)(key, wanted, limit)
        return statement

    def _many_join(self, key: str, wanted: sa.BindParameter[Any], limit: sa.BindParameter[Any]) -> sa.Select[Any]:
        """SQLite: `_many_statement` as a join of the wanted pairs (`json_each`) to their status and rows."""
        tables = self._sys_db.tables
        status, streams = tables.workflow_status, tables.streams
        items = sa.func.json_each(wanted).table_valued("value")
        want = sa.select(sa.func.json_extract(items.c.value, "$.wf").label("wf"),
                         sa.func.json_extract(items.c.value, "$.off").label("off")).cte("want")
        joined = want.outerjoin(status, status.c.workflow_uuid == want.c.wf).outerjoin(
            streams, sa.and_(streams.c.workflow_uuid == want.c.wf, streams.c.key == key,
                             streams.c.offset >= want.c.off, streams.c.offset < want.c.off + limit))
        return (sa.select(want.c.wf, status.c.status, streams.c.offset, streams.c.value, streams.c.serialization)
                .select_from(joined).order_by(want.c.wf, streams.c.offset))

    def _many_lookups(self, key: str, wanted: sa.BindParameter[Any], limit: sa.BindParameter[Any]) -> sa.Select[Any]:
        """Postgres: `_many_statement` as one index lookup per wanted stream (a LATERAL subquery with a
        LIMIT, which the planner cannot flatten into a join). As a join, the planner guesses 100 wanted
        rows and, with the table's statistics behind a burst of writes, hashes every row of the stream key
        instead, a cost that grows with every debate the table keeps."""
        tables = self._sys_db.tables
        status, streams = tables.workflow_status, tables.streams
        want = sa.func.json_to_recordset(sa.cast(wanted, sa.JSON)).table_valued(
            sa.column("wf", sa.Text), sa.column("off", sa.Integer)).render_derived(name="want", with_types=True)
        found = (sa.select(status.c.status).where(status.c.workflow_uuid == want.c.wf)
                 .scalar_subquery().label("status"))
        rows = (sa.select(streams.c.offset, streams.c.value, streams.c.serialization)
                .where(streams.c.workflow_uuid == want.c.wf, streams.c.key == key, streams.c.offset >= want.c.off)
                .order_by(streams.c.offset).limit(limit).lateral("rows"))
        return (sa.select(want.c.wf, found, rows.c.offset, rows.c.value, rows.c.serialization)
                .select_from(want.outerjoin(rows, sa.true())).order_by(want.c.wf, rows.c.offset))


def _wanted(offsets: dict[str, int]) -> str:
    """The (workflow, offset) pairs of a batched read, as its one JSON parameter."""
    return json.dumps([{"wf": workflow_id, "off": offset} for workflow_id, offset in offsets.items()])


def is_active(status: str) -> bool:
    """The workflow may still write: enqueued, pending or delayed."""
    return workflow_is_active(status)
