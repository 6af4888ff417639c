"""SQLite: a step's check and record and its stream writes run on the event loop's own connection to the
workflow database, when the database is free, instead of in DBOS's thread pool.

A statement on the file costs microseconds; the hop to DBOS's pool and back around it, the GIL changing
hands and SQLAlchemy's checkout and execution cost ~0.3 ms each, two a step. The loop's connection never
waits: `busy_timeout` is 0, so when another connection holds the write lock (another step's write in the
pool, a front enqueueing, DBOS's queue thread) a write here fails at once with `Busy`, having done nothing.
`when_free` tries it again after a short sleep of the calling task, the loop running other work meanwhile, and
only a statement that found the file locked throughout RETRY_WAITS_S goes through DBOS's pool. A write holds
the lock for a fraction of a millisecond, and at 1,000 debates on two workers and a front 45 % of the steps'
checks and records found it taken at their first try: sent through the pool they cost a thread hop and
SQLAlchemy's execution each, and waited in SQLite's own busy handler, which sleeps 1, 2, 5, 10 ms … between its
tries. In WAL mode a read does not wait for a writer (but may find the file busy while the WAL is reset). The
loop's connection never checkpoints (`wal_autocheckpoint=0`: a checkpoint syncs the files, and the loop must
not wait on the disk); the pool's connections, which commit every stream write, go on doing it. It is opened
as DBOS opens its own (WAL, synchronous=NORMAL, foreign keys on), one per thread that asks.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from dbos._sys_db import SystemDatabase


class Busy(Exception):
    """The database was locked by another connection: nothing was done here."""


@contextmanager
def _at_once() -> Iterator[None]:
    """SQLite's answer that another connection holds the file (busy, locked) raised as Busy."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(exc):
            raise Busy(str(exc)) from exc
        raise


T = TypeVar("T")

# The sleeps between a statement's tries on the loop's connection while the file is locked (15.5 ms in all).
RETRY_WAITS_S = (0.0005, 0.001, 0.002, 0.004, 0.008)


async def when_free(attempt: Callable[[], T]) -> T:
    """`attempt()`, a statement on the loop's connection that raises Busy having done nothing while another
    connection holds the file, tried again after each of RETRY_WAITS_S; Busy if it never found the file free."""
    for wait in RETRY_WAITS_S:
        try:
            return attempt()
        except Busy:
            await asyncio.sleep(wait)
    return attempt()


def unique_violation(exc: sqlite3.IntegrityError) -> bool:
    """A UNIQUE constraint refused the write, as DBOS's SQLite database tells it (`_is_unique_constraint_violation`)."""
    return "UNIQUE constraint failed" in str(exc)


def file_of(sys_db: SystemDatabase) -> str | None:
    """The file of an SQLite system database (None: not SQLite, or in memory, where another connection
    would open another database)."""
    url = sys_db.engine.url
    path = url.database
    if url.get_backend_name() != "sqlite" or not path or path == ":memory:" or "mode=memory" in path:
        return None
    return path


class LoopSQLite:
    """Statements on a connection of this thread's own to the system database's file."""

    def __init__(self, sys_db: SystemDatabase) -> None:
        path = file_of(sys_db)
        assert path is not None, "an SQLite system database in a file"
        self._path = path
        self._local = threading.local()
        _all.add(self)

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, isolation_level=None, timeout=0)  # transactions begun explicitly
            try:
                with _at_once():  # the file may be busy already (its WAL being opened or recovered)
                    for pragma in ("busy_timeout=0", "synchronous=NORMAL", "foreign_keys=ON", "wal_autocheckpoint=0"):
                        conn.execute(f"PRAGMA {pragma}")
            except BaseException:
                conn.close()
                raise
            self._local.conn = conn
        return conn

    def rows(self, sql: str, params: Any) -> list[Any]:
        """A read's rows; Busy if the file could not be read at once."""
        conn = self._conn()
        with _at_once():
            return conn.execute(sql, params).fetchall()

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE), committed at the end, rolled back on an error; Busy, with
        nothing written, if another connection holds the write lock."""
        conn = self._conn()
        with _at_once():
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    async def written(self, write: Callable[[sqlite3.Connection], T]) -> T:
        """`write(conn)` in one write transaction (`writing`), tried again while the file is locked (`when_free`);
        Busy, with nothing written, if it never found the file free."""

        def attempt() -> T:
            with self.writing() as conn:
                return write(conn)

        return await when_free(attempt)

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


_all: weakref.WeakSet[LoopSQLite] = weakref.WeakSet()


def close_all() -> None:
    """Close this thread's connections of every LoopSQLite (the worker stopping)."""
    for loop_sqlite in list(_all):
        loop_sqlite.close()
