"""What test_log_outage.py shares with other test modules, moved here so that no test module imports another:
`LogLock`, `ONE_AT_A_TIME`, `chat_spec`, `names_the_lock`."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg

from orchestrator.events import LOG_WRITE_FAILED
from orchestrator.models import DebateSpec, Seat
from orchestrator.quotas import Quota
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:model-a"),
         Seat(label="B", role="challenger", model="openai:model-b"))


ONE_AT_A_TIME = Quota(max_running=10, max_running_per_user=1)


def chat_spec(topic: str) -> DebateSpec:
    return DebateSpec(topic=topic, seats=SEATS, judge="openai:judge", rounds=1, platform="slack", workspace="T1",
                      channel="C1", requested_by="U1")


def names_the_lock(error: str) -> bool:
    """The reason a debate the log stopped gives names the lock that stopped it, not the disk."""
    return "stayed locked by another" in error and "disk" not in error and error != LOG_WRITE_FAILED


class LogLock:
    """Another connection holding the log's write lock: SQLite `BEGIN EXCLUSIVE` on the file; Postgres
    `LOCK TABLE turns IN ACCESS EXCLUSIVE MODE` (the store's connections give up after `lock_timeout`)."""

    def __init__(self, backend: LogBackend) -> None:
        self.backend = backend
        self._sqlite: sqlite3.Connection | None = None
        self._pg: psycopg.Connection[Any] | None = None

    def take(self) -> None:
        if self.backend.name == "sqlite":
            self._sqlite = sqlite3.connect(self.backend.target, timeout=10, isolation_level=None)
            self._sqlite.execute("BEGIN EXCLUSIVE")
        else:
            self._pg = psycopg.connect(self.backend.target)
            self._pg.execute("LOCK TABLE turns IN ACCESS EXCLUSIVE MODE")

    def release(self) -> None:
        if self._sqlite is not None:
            self._sqlite.execute("ROLLBACK")
            self._sqlite.close()
            self._sqlite = None
        if self._pg is not None:
            self._pg.rollback()
            self._pg.close()
            self._pg = None
