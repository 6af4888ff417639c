"""Every use this program makes of DBOS's private API, in one place: a client's system database, its
stream listeners and batched stream reads, the deserialiser of stored values, the close marker of a
stream, and which statuses are still running (stream_reads.py is the user).

These are not DBOS's public interface, so pyproject pins DBOS to the minor version they were checked
against (PINNED_MINOR, `dbos>=3.4,<3.5`), and tests/test_dbos_private.py exercises each of them against
the installed DBOS on a real SQLite system database. Upgrading DBOS is this file and that test run
(docs/dbos-notes.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dbos import DBOSClient
from dbos._serialization import deserialize_value
from dbos._sys_db import SystemDatabase, is_serialized_stream_closed_sentinel, workflow_is_active
from dbos._utils import LoopAwareEvent

PINNED_MINOR = "3.4"  # the DBOS version these calls were checked against (pyproject: dbos>=3.4,<3.5)


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


class SystemStreams:
    """The streams of a DBOS client's system database, read directly."""

    def __init__(self, client: DBOSClient) -> None:
        self._sys_db: SystemDatabase = client._sys_db

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
        (blocking: call it from a worker thread)."""
        status, rows = self._sys_db.read_stream_values(workflow_id, key, offset, limit)
        chunk = StreamChunk(status)
        for serialized, serialization in rows:
            if is_serialized_stream_closed_sentinel(serialized, serialization):
                chunk.closed = True
                break
            chunk.values.append(deserialize_value(serialized, serialization, self._sys_db.serializer))
        return chunk


def is_active(status: str) -> bool:
    """The workflow may still write: enqueued, pending or delayed."""
    return workflow_is_active(status)
