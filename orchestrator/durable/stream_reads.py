"""Reading many workflows' streams at once: `StreamReads`, one per front, for every debate it follows.

DBOS's own stream reader (`DBOSClient.read_stream_async`) is made for one stream: per value it hops
to a worker thread four or five times (cancellation check, replay check, read, deserialise, record),
and a front follows every live debate at once. Measured at 1,000 debates on Postgres, that was about
10 ms of the front's CPU per model call. Here each debate's reader still waits on its own DBOS
listener event (LISTEN/NOTIFY on Postgres, polling on SQLite), but its reads join a shared batch:
every read asked for while a batch is in flight goes in the next one, and a batch is one thread hop
that reads and deserialises the new values of all its streams.

This uses the DBOS client's system database directly, through dbos_private.py (the one module that
touches DBOS's private API, with its contract test).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from dbos import DBOSClient

from orchestrator.durable.dbos_private import SystemStreams, is_active

BATCH_VALUES = 100  # values one stream gives a batch at most; a reader behind asks again at once


class StreamMissing(LookupError):
    """The workflow does not exist (never enqueued, or deleted)."""


@dataclass
class _Read:
    """One stream's part of a batch: what it asks, and what the batch found."""

    workflow_id: str
    offset: int
    done: asyncio.Future[None]
    status: str | None = None
    values: list[Any] = field(default_factory=list)
    closed: bool = False  # the stream's close marker came after `values`
    error: Exception | None = None  # the read failed (its reader raises it)


class StreamReads:
    """Batched reads of the stream `key` of many workflows, through one DBOS client."""

    def __init__(self, client: DBOSClient, key: str, *, poll_seconds: float) -> None:
        self._streams = SystemStreams(client)
        self._key = key
        self._poll_seconds = poll_seconds
        self._asked: list[_Read] = []
        self._batch: asyncio.Task[None] | None = None

    async def values(self, workflow_id: str, offset: int = 0) -> AsyncIterator[Any]:
        """The stream's values from `offset` on, until it closes or its workflow has ended and every
        value written is read. Raises StreamMissing when the workflow does not exist."""
        last_read = False
        with self._streams.listening(workflow_id, self._key) as listener:  # before the first read
            while True:
                listener.clear()  # a write after this read sets it again: the wait below returns at once
                read = await self._read(workflow_id, offset)
                if read.status is None:
                    raise StreamMissing(workflow_id)
                for value in read.values:
                    yield value
                    offset += 1
                if read.closed:
                    return
                if read.values:
                    continue
                if last_read:
                    return
                if not is_active(read.status):
                    last_read = True  # a stop marks the workflow ended while its last step may still write
                    continue
                await listener.wait(self._poll_seconds)

    async def _read(self, workflow_id: str, offset: int) -> _Read:
        read = _Read(workflow_id, offset, asyncio.get_running_loop().create_future())
        self._asked.append(read)
        if self._batch is None or self._batch.done():
            self._batch = asyncio.create_task(self._run_batches(), name="stream-reads")
        await read.done
        return read

    async def _run_batches(self) -> None:
        """Serve what was asked, batch after batch, until nobody is waiting."""
        while self._asked:
            batch, self._asked = self._asked, []
            await asyncio.to_thread(self._fill, batch)
            for read in batch:
                if read.done.done():  # its reader was cancelled meanwhile
                    continue
                if read.error is not None:
                    read.done.set_exception(read.error)
                else:
                    read.done.set_result(None)

    def _fill(self, batch: list[_Read]) -> None:
        """In a worker thread: each stream's new values and its workflow's status, deserialised."""
        for read in batch:
            try:
                chunk = self._streams.read(read.workflow_id, self._key, read.offset, BATCH_VALUES)
            except Exception as exc:  # the database went away, or a value no serializer here reads
                read.error = exc
            else:
                read.status, read.values, read.closed = chunk.status, chunk.values, chunk.closed
