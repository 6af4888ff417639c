"""Postgres: the NOTIFY that wakes a front's readers after a stream write, coalesced and sent from the loop.

DBOS coalesces its stream notifications in a thread of its own: every `notification_coalesce_sec` (10 ms)
it sends what is pending as one `pg_notify` over unnest, in a transaction of DBOS's SQLAlchemy engine. With a
worker streaming a few hundred debates that thread woke ~60 times a second and cost ~1 ms of the worker's
CPU each time: 0.78 s of 12 s, about a tenth of the worker.

`LoopNotifier` does the same from the event loop that made the writes: the payloads written within the same
interval are one statement in autocommit through the loop's own connections (dbos_loop_statements.py). A
failed NOTIFY is dropped, as DBOS drops it: a reader also reads every stream now and then, whatever it hears
(stream_reads.py), so a lost wake-up only makes it later.
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from orchestrator.durable.dbos_loop_statements import LoopStatements

log = logging.getLogger(__name__)

DEFAULT_COALESCE_S = 0.01  # DBOS's default notification_coalesce_sec
NOTIFY_SQL = "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) AS p"


class _Pending:
    """One loop's payloads waiting for its next flush, and the flushes under way."""

    def __init__(self) -> None:
        self.payloads: dict[str, set[str]] = {}
        self.timer: asyncio.TimerHandle | None = None
        self.sending: set[asyncio.Task[None]] = set()


class LoopNotifier:
    """Coalesced NOTIFYs of one system database, sent from the loop that signals them."""

    def __init__(self, statements: LoopStatements, coalesce_s: float) -> None:
        self.statements = statements
        self.coalesce_s = coalesce_s
        self.sent = 0  # NOTIFY statements that went through
        self._loops: dict[asyncio.AbstractEventLoop, _Pending] = {}

    def signal(self, channel: str, payload: str) -> None:
        """Wake the readers of `payload` on `channel` within `coalesce_s` (call it on a running loop)."""
        loop = asyncio.get_running_loop()
        pending = self._loops.get(loop)
        if pending is None:
            pending = self._loops[loop] = _Pending()
        pending.payloads.setdefault(channel, set()).add(payload)
        if pending.timer is None:
            pending.timer = loop.call_later(self.coalesce_s, self._flush, pending)

    def _flush(self, pending: _Pending) -> None:
        pending.timer = None
        batches, pending.payloads = pending.payloads, {}
        task = asyncio.get_running_loop().create_task(self._send(batches), name="stream-notify")
        pending.sending.add(task)
        task.add_done_callback(pending.sending.discard)

    async def _send(self, batches: dict[str, set[str]]) -> None:
        for channel, payloads in batches.items():
            if self.statements.closed_here():  # stopping: a wake-up would open the connections again
                return
            try:  # no retry: a reader's own poll finds the write if this wake-up is lost
                await self.statements.rowcount(NOTIFY_SQL, (channel, sorted(payloads)), retry=False)
                self.sent += 1
            except Exception as exc:
                log.warning("stream notifications on %s dropped (%d): %s", channel, len(payloads), exc)

    async def close(self) -> None:
        """Send what the running loop has pending now and wait for its flushes (the worker stopping)."""
        pending = self._loops.pop(asyncio.get_running_loop(), None)
        if pending is None:
            return
        if pending.timer is not None:
            pending.timer.cancel()
            self._flush(pending)
        await asyncio.gather(*pending.sending, return_exceptions=True)


_all: weakref.WeakSet[LoopNotifier] = weakref.WeakSet()


def notifier(statements: LoopStatements, coalesce_s: float | None) -> LoopNotifier:
    """A notifier for the stream writes sent through `statements`, every `coalesce_s` (None: DBOS's default)."""
    made = LoopNotifier(statements, DEFAULT_COALESCE_S if coalesce_s is None else coalesce_s)
    _all.add(made)
    return made


async def close_all() -> None:
    """Send every notifier's pending wake-ups from this loop (before its connections close)."""
    for made in list(_all):
        await made.close()
