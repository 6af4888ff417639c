"""Reading many workflows' streams at once: `StreamReads`, one per front, for every debate it follows.

DBOS's own reader (`DBOSClient.read_stream_async`) follows one stream, and its SQLite listener wakes
every reader at every poll: a front following many debates would spend most of its CPU on reads that
find nothing. Here the front's readers share one loop and one statement: a reader registers its stream
and offset and sleeps; each pass reads every due stream in one query (`SystemStreams.read_many`) and
wakes only the readers with something new (values, the close marker, or a workflow that ended).

Which streams are due: on SQLite (no notifications) one cheap statement every `poll_seconds` lists the
streams written since the last (`SystemStreams.changed_since`), and every QUIET_POLLS polls the quiet
ones are read too (a workflow may end without closing its stream). On Postgres DBOS's LISTEN/NOTIFY
listener hands a written stream's reader to this loop (`StreamListener.call_once_set`), and every
stream is read at least every `poll_seconds` in case a notification was lost. Readers just started or
behind are read at once. The reads go through dbos_private.py, the one module using DBOS's private API.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import ExitStack
from dataclasses import dataclass

from dbos import DBOSClient

from orchestrator.durable.dbos_private import StreamChunk, StreamListener, SystemStreams, is_active

BATCH_VALUES = 100  # values one stream gives a pass at most; a reader behind asks again at once
NOTIFIED_PASS_SECONDS = 0.05  # Postgres: passes for notified streams at most this often (each reads all notified)
STALE_LOOK_SECONDS = 1.0  # Postgres: how often every reader is looked at for one unread for `poll_seconds`
QUIET_POLLS = 10  # SQLite: every this many polls (1 s) a pass reads the streams no scan saw written of late


class StreamMissing(LookupError):
    """The workflow does not exist (never enqueued, or deleted)."""


@dataclass(eq=False)
class _Waiter:
    """One reader waiting for its stream to have something past `offset`."""

    workflow_id: str
    offset: int
    done: asyncio.Future[StreamChunk]
    now: bool  # read in the next pass, whatever the clock says
    listener: StreamListener | None  # Postgres: set by a NOTIFY of a write to the stream
    read_at: float  # monotonic time of the stream's last read: due again a poll later
    seen: int  # SQLite: the highest rowid of the scan before that read (every row at or below it was read)
    take_back: Callable[[], None] | None = None  # Postgres: the listener's call-back to this loop, while armed


class StreamReads:
    """Reads of the stream `key` of many workflows, one query per pass, through one DBOS client."""

    def __init__(self, client: DBOSClient, key: str, *, poll_seconds: float) -> None:
        self._streams = SystemStreams(client)
        self._key = key
        self._poll_seconds = poll_seconds
        self._waiting: dict[_Waiter, None] = {}  # insertion-ordered, and a reader leaves in O(1)
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self.passes = 0  # queries made: one per pass, whatever the number of streams in it
        self._scanned = not self._streams.notified  # SQLite: scans say which streams were written
        self._high: int | None = None  # the highest rowid of the last scan (None: no scan yet)
        self._scan_at = self._sweep_at = float("-inf")
        self._followers: Counter[str] = Counter()  # workflow → its readers (a value iterator each)
        self._latest: dict[str, int] = {}  # a followed stream's highest rowid the scans saw
        self._flagged: dict[_Waiter, None] = {}  # Postgres: readers to read in the next pass (written, or `now`)
        self._passed_at = float("-inf")  # Postgres: when the last pass began
        self._stale_at = 0.0  # Postgres: when to look at every reader next for one unread for `poll_seconds`

    async def values(self, workflow_id: str, offset: int = 0) -> AsyncIterator[object]:
        """The stream's values from `offset` on, until it closes or its workflow has ended and every
        value written is read. Raises StreamMissing when the workflow does not exist."""
        self._followers[workflow_id] += 1
        try:
            with ExitStack() as stack:
                listener = (stack.enter_context(self._streams.listening(workflow_id, self._key))
                            if self._streams.notified else None)  # before the first read: no write is missed
                now, last_read, read_at, seen = True, False, 0.0, -1
                while True:
                    chunk, read_at, seen = await self._next(workflow_id, offset, now=now, read_at=read_at,
                                                            seen=seen, listener=listener)
                    if chunk.status is None:
                        raise StreamMissing(workflow_id)
                    for value in chunk.values:
                        yield value
                        offset += 1
                    if chunk.closed:
                        return
                    if chunk.values:
                        now = len(chunk.values) >= BATCH_VALUES  # behind: read on at once
                        continue
                    if last_read:
                        return
                    # the workflow has ended, but a stop marks it ended while its last step may still write
                    last_read = now = True
        finally:
            self._followers[workflow_id] -= 1
            if not self._followers[workflow_id]:
                del self._followers[workflow_id]
                self._latest.pop(workflow_id, None)

    async def _next(self, workflow_id: str, offset: int, *, now: bool, read_at: float, seen: int,
                    listener: StreamListener | None) -> tuple[StreamChunk, float, int]:
        """What a pass finds new in the stream past `offset` (values, its close, or its workflow ended),
        when that pass read it and the highest rowid it read up to. `read_at`, `seen`: those of the last read."""
        waiter = _Waiter(workflow_id, offset, asyncio.get_running_loop().create_future(), now, listener, read_at,
                         seen)
        self._waiting[waiter] = None
        if listener is not None:
            self._arm(waiter)
            if now:
                self._flag(waiter)
        elif now:
            self._wake.set()
        if self._loop is None or self._loop.done():
            self._loop = asyncio.create_task(self._run(), name="stream-reads")
        try:
            return await waiter.done, waiter.read_at, waiter.seen
        finally:
            self._leave(waiter)  # done, or its reader was cancelled: it leaves the next passes

    async def _run(self) -> None:
        """Pass after pass while any reader waits (on SQLite, a scan for writes every poll)."""
        while self._waiting:
            sweep = False
            if self._scanned and time.monotonic() - self._scan_at >= self._poll_seconds:
                await self._scan()
                sweep = self._scan_at - self._sweep_at >= self._poll_seconds * QUIET_POLLS
                if sweep:
                    self._sweep_at = self._scan_at
            due = self._due(time.monotonic(), sweep)
            if not due:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), self._sleep_seconds())
                except TimeoutError:
                    pass
                continue
            await self._pass(due)

    async def _scan(self) -> None:
        """Which followed streams were written since the last scan (SQLite)."""
        self._scan_at = time.monotonic()
        try:
            changed, top = await asyncio.to_thread(self._streams.changed_since, self._key, self._high)
        except Exception:  # the database went away: the readers' next read says so
            for w in self._waiting:
                w.now = True
            return
        if self._high is not None and top < self._high:  # rowids reused (a VACUUM): every stream is read again
            self._latest.clear()
            for w in self._waiting:
                w.now = True
        self._high = top
        for workflow_id, rowid in changed.items():
            if workflow_id in self._followers:
                self._latest[workflow_id] = rowid

    def _due(self, clock: float, sweep: bool = False) -> list[_Waiter]:
        """The readers to read now. SQLite: just started or behind, or written since their last read, or in
        a `sweep` (every QUIET_POLLS polls) if not read in the last half of that: their reads share one pass.
        Postgres: those flagged (just started, behind or written), unless a pass began within
        NOTIFIED_PASS_SECONDS and none of them is `now`, and once a second those unread for `poll_seconds`."""
        if self._scanned:
            quiet = clock - self._poll_seconds * QUIET_POLLS / 2
            return [w for w in self._waiting if w.now or self._latest.get(w.workflow_id, -1) > w.seen
                    or (sweep and w.read_at <= quiet)]
        if clock >= self._stale_at:
            self._stale_at = clock + min(STALE_LOOK_SECONDS, self._poll_seconds)
            for w in self._waiting:
                if clock - w.read_at >= self._poll_seconds:
                    self._flagged[w] = None
        if not self._flagged or (clock - self._passed_at < NOTIFIED_PASS_SECONDS
                                 and not any(w.now for w in self._flagged)):
            return []
        due, self._flagged = list(self._flagged), {}
        return due

    def _sleep_seconds(self) -> float:
        clock = time.monotonic()
        if self._scanned:
            return max(0.0, self._scan_at + self._poll_seconds - clock)
        if self._flagged:  # written, but a pass began within NOTIFIED_PASS_SECONDS
            return max(0.0, self._passed_at + NOTIFIED_PASS_SECONDS - clock)
        return max(0.0, self._stale_at - clock)

    def _flag(self, waiter: _Waiter) -> None:
        """Postgres: `waiter` is read in the next pass; the first flag since the last pass wakes the loop."""
        if waiter not in self._waiting or waiter in self._flagged:
            return
        if not self._flagged or waiter.now:
            self._wake.set()
        self._flagged[waiter] = None

    def _arm(self, waiter: _Waiter) -> None:
        """Postgres: the next write to `waiter`'s stream (or one since its listener was cleared) flags it."""
        assert waiter.listener is not None
        if waiter.take_back is None:
            waiter.take_back = waiter.listener.call_once_set(lambda: self._written(waiter))

    def _written(self, waiter: _Waiter) -> None:
        waiter.take_back = None
        self._flag(waiter)

    async def _pass(self, due: list[_Waiter]) -> None:
        """One query for every due stream; the readers with something new are woken, the others wait on."""
        offsets = {w.workflow_id: w.offset for w in due}
        seen = -1 if self._high is None else self._high  # the read comes after that scan: it sees those rows
        self._passed_at = clock = time.monotonic()
        for w in due:
            w.now = False
            w.read_at = clock
            w.seen = seen
            if w.listener is not None:
                w.listener.clear()  # a write after this sets it again: the stream is read in a later pass
                self._arm(w)
        self.passes += 1
        try:
            chunks = await asyncio.to_thread(self._streams.read_many, self._key, offsets, BATCH_VALUES)
        except Exception as exc:  # the database went away, or a value no serializer here reads
            for w in due:
                self._finish(w, exc)
            return
        still_active = {status for status in {c.status for c in chunks.values()} if status and is_active(status)}
        for w in due:
            if w.done.done():  # its reader was cancelled during the query
                continue
            chunk = chunks[w.workflow_id] if offsets[w.workflow_id] == w.offset else None
            if chunk is None:  # two readers of one stream at other offsets: read this one next pass
                w.now = True
                if w.listener is not None:
                    self._flag(w)
            elif chunk.values or chunk.closed or chunk.status is None or chunk.status not in still_active:
                self._finish(w, chunk)

    def _finish(self, waiter: _Waiter, outcome: StreamChunk | Exception) -> None:
        self._leave(waiter)
        if waiter.done.done():
            return
        if isinstance(outcome, Exception):
            waiter.done.set_exception(outcome)
        else:
            waiter.done.set_result(outcome)

    def _leave(self, waiter: _Waiter) -> None:
        self._waiting.pop(waiter, None)
        self._flagged.pop(waiter, None)
        if waiter.take_back is not None:
            waiter.take_back()
            waiter.take_back = None
