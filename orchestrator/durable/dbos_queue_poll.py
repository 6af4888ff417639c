"""A queue poll that finds nothing costs one statement (DBOS's private `start_queued_workflows`, swapped).

DBOS's queue thread polls the debates queue every QUEUE_POLL_S (0.25 s) and each time runs its dequeue
transaction, whatever the queue holds: BEGIN, the latest application version (its query built anew), the
SELECT … FOR UPDATE SKIP LOCKED, COMMIT. An idle worker on Postgres spent 27 ms of CPU a second, two thirds
of it there, and its server more. `install` puts a check in front of it: one statement, compiled once, in
autocommit, asks whether any workflow of the queue is ENQUEUED (an index probe: DBOS's
idx_workflow_status_in_flight). When none is, the poll returns what DBOS's returns when its SELECT finds
none. A workflow enqueued just after the check waits for the next poll, as one enqueued just after DBOS's
SELECT does; any other poll (a partition's, or one with work waiting) is DBOS's own.

DBOS's private API, pinned with the rest (dbos_private.py PINNED_MINOR); tests/test_dbos_queue_poll.py runs
DBOS's queue on real SQLite and Postgres system databases through it.
"""

from __future__ import annotations

import weakref
from typing import Any

import sqlalchemy as sa
from dbos._dbos import _get_dbos_instance
from dbos._sys_db import SystemDatabase, WorkflowStatusString

from orchestrator.durable.dbos_step_records import PLAIN, Prepared, autocommit, autocommits, swap

ENQUEUED = WorkflowStatusString.ENQUEUED.value


class QueuePoll:
    """The check in front of one system database's dequeue."""

    def __init__(self, sys_db: SystemDatabase) -> None:
        self.sys_db = sys_db
        status = sys_db.tables.workflow_status
        self.waiting = Prepared(
            sa.select(sa.literal(1)).where(status.c.queue_name == sa.bindparam("queue", type_=sa.Text),
                                           status.c.status == ENQUEUED).limit(1), sys_db)
        self.skipped = 0  # polls answered by the check alone

    def any_waiting(self, queue_name: str) -> bool:
        params = self.waiting.params({"queue": queue_name})
        if autocommits(self.sys_db):
            with autocommit(self.sys_db.engine) as conn:
                return conn.exec_driver_sql(self.waiting.sql, params).first() is not None
        with self.sys_db.engine.connect() as conn:  # SQLite: a read opens no transaction
            return conn.exec_driver_sql(self.waiting.sql, params).first() is not None

    def start_queued(self, original: Any, queue: Any, executor_id: str, app_version: str,
                     queue_partition_key: str | None, *args: Any, **kwargs: Any) -> Any:
        """DBOS's `start_queued_workflows`, unless nothing of the queue is waiting: then no claim, no stop reason."""
        if queue_partition_key is None and not self.any_waiting(queue.name):
            self.skipped += 1
            return [], None
        return original(queue, executor_id, app_version, queue_partition_key, *args, **kwargs)


def install(sys_db: SystemDatabase) -> QueuePoll | None:
    """Put the check in front of the system database's dequeue; None (nothing changed) for a database this
    was not written for, or installed already."""
    if type(sys_db) not in PLAIN or sys_db in _installed:
        return None
    poll = _installed[sys_db] = QueuePoll(sys_db)
    swap(sys_db, "start_queued_workflows", poll.start_queued)
    return poll


def install_launched() -> QueuePoll | None:
    """`install` on the system database of this process's launched DBOS."""
    return install(_get_dbos_instance()._sys_db)


_installed: weakref.WeakKeyDictionary[SystemDatabase, QueuePoll] = weakref.WeakKeyDictionary()
