"""One dedicated thread owns a SQLite connection and runs work sent to it as plain `fn(db)` calls.

A `sqlite_utils.Database` works only in the thread that created it (Datasette's write-thread pattern). Each result
or exception comes back to the awaiting coroutine through `loop.call_soon_threadsafe`, so the event loop never blocks
on SQLite. Writes queued together share one commit (`_run_group`), and a write waits out a lock another process holds
(`LockWait`) before it fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

try:
    import fcntl
except ImportError:  # Windows: no advisory file locks; one process at a time there
    fcntl = None  # type: ignore[assignment]

from sqlite_utils import Database

from orchestrator.log.records import LogUnavailableError, ReadOnlyLogError, StoreClosedError, StoreError
from orchestrator.log.schema import MIGRATIONS_TABLE, migration_names, migrations
from orchestrator.private_files import FILE_MODE, create_private

log = logging.getLogger(__name__)

T = TypeVar("T")
GROUP_MAX = 64  # queued writes one commit takes at most
BUSY_TIMEOUT_MS = 5000  # one try's wait for another process's write lock (SQLite's busy handler)
LOCK_WAIT_S = 300.0  # how long a write waits, over its tries, for a lock another process holds
LOCK_WAIT_VARIABLE = "DEBATE_LOG_LOCK_WAIT_S"


@dataclass(slots=True)
class _Job:
    fn: Callable[[Database], Any] | None  # None: close the connection and end the thread
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    write: bool = False


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting coroutine was cancelled; the work still happened
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _hand_back(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any, error: BaseException | None
) -> None:
    try:
        loop.call_soon_threadsafe(_settle, future, result, error)
    except RuntimeError:  # the loop closed while the job ran; nobody is waiting any more
        log.debug("store result dropped: event loop closed")



@contextlib.contextmanager
def _opening_lock(path: Path):
    """Serialise opening across processes: switching to WAL and migrating take locks that SQLite's
    busy timeout does not wait for, so a front and a worker starting together could fail with
    "database is locked". The lock file lives beside the log, mode 0600."""
    if fcntl is None:
        yield
        return
    fd = os.open(f"{path}.lock", os.O_CREAT | os.O_RDWR, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def open_database(path: Path) -> Database:
    """Open the file with the pragmas the log relies on and bring the schema up to date. A file created here is
    mode 0600 whatever the umask (SQLite gives the -wal and -shm files the database's own mode)."""
    with _opening_lock(path):
        create_private(path)
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
        db = Database(conn)
        db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        migrations.apply(db)
    return db


def _optimize(db: Database) -> None:
    """Best effort at close: `PRAGMA optimize` upgrades a read to a write, which SQLite refuses at once
    (no busy wait) when another process wrote meanwhile; the statistics can wait for the next close."""
    try:
        db.execute("PRAGMA optimize")
    except sqlite3.OperationalError as error:
        log.debug("log: PRAGMA optimize skipped at close: %s", error)


def open_reader(path: Path) -> Database:
    """Open the file read-only (SQLite `mode=ro`); refuse a schema older than this code reads."""
    if not path.exists():
        db = Database(memory=True)  # nothing logged yet: an empty log, and no file created
        migrations.apply(db)
        return db
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    db = Database(conn)
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    applied = set()
    if db[MIGRATIONS_TABLE].exists():
        applied = {r[0] for r in db.execute(f"select name from {MIGRATIONS_TABLE}").fetchall()}
    missing = [name for name in migration_names("sqlite") if name not in applied]
    if missing:
        db.close()
        raise StoreError(f"the debate log at {path} uses an older schema; run `debate serve` or `debate run` "
                         "once to upgrade it")
    return db


def _run_in_transaction(db: Database, fn: Callable[[Database], T], write: bool) -> T:
    conn = db.conn
    # IMMEDIATE takes the write lock up front, so another process's writer makes us wait on
    # busy_timeout instead of failing with SQLITE_BUSY when a read turns into a write.
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        result = fn(db)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if conn.in_transaction:
        conn.execute("COMMIT")
    return result


def lock_wait_s() -> float:
    """DEBATE_LOG_LOCK_WAIT_S (seconds, > 0) or LOCK_WAIT_S; a value that is not a positive number is refused."""
    given = os.environ.get(LOCK_WAIT_VARIABLE, "").strip()
    if not given:
        return LOCK_WAIT_S
    try:
        value = float(given)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise StoreError(f"{LOCK_WAIT_VARIABLE} must be a positive number of seconds, not {given[:40]!r}")
    return value


def _is_locked(error: BaseException) -> bool:
    """SQLite's answer that another connection holds the lock (busy, locked), after its busy timeout."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(error)


class LockWait:
    """Begins write transactions, waiting for a lock another process holds (a backup, a second writer, an
    operator's `sqlite3` shell) for up to `limit_s` in all, as the workflow side waits for its own file: each
    try waits SQLite's busy timeout, and the tries go on until the lock has been held for `limit_s`."""

    def __init__(self, path: Path, limit_s: float) -> None:
        self.path = path
        self.limit_s = limit_s
        self.tries_locked = 0  # tries that found the file locked past the busy timeout (tests watch it)

    def begin(self, conn: sqlite3.Connection) -> None:
        """BEGIN IMMEDIATE, tried again while another process holds the lock; LogUnavailableError once it
        has been held for `limit_s`."""
        started = time.monotonic()
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as error:
                if not _is_locked(error):
                    raise
                self.tries_locked += 1
                waited = time.monotonic() - started
                if waited >= self.limit_s:
                    raise LogUnavailableError(
                        f"the debate log {self.path.name} stayed locked by another process for {waited:.0f} s"
                    ) from error
                if self.tries_locked % 10 == 1:
                    log.warning("log: %s is locked by another process; waited %.1f s of %.0f s",
                                self.path, waited, self.limit_s)


def _run_group(db: Database, group: list[_Job], locks: LockWait) -> list[tuple[Any, BaseException | None]]:
    """Every write of `group` in one transaction, each in a savepoint; (result, error) per write.

    Group commit: a commit's kernel work is the costly part, and a worker running many debates queues several
    writes at a time. A write that fails is undone alone (its savepoint), and no write is answered before the
    commit that makes them all durable."""
    conn = db.conn
    outcomes: list[tuple[Any, BaseException | None]] = []
    opened_at = 0  # the first write of the open transaction
    for index, job in enumerate(group):
        assert job.fn is not None
        try:
            if not conn.in_transaction:
                locks.begin(conn)
                opened_at = index
            conn.execute("SAVEPOINT log_write")
        except BaseException as exc:  # locked past the whole wait, or the file is gone: the rest fail
            return outcomes + [(None, exc)] * (len(group) - index)
        try:
            outcomes.append((job.fn(db), None))
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK TO SAVEPOINT log_write")
            else:  # the error ended the whole transaction: the writes before it in it are undone too
                outcomes[opened_at:index] = [(None, exc)] * (index - opened_at)
            outcomes.append((None, exc))
        if conn.in_transaction:
            conn.execute("RELEASE SAVEPOINT log_write")
    try:
        if conn.in_transaction:
            conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        outcomes[opened_at:] = [(None, exc)] * (len(group) - opened_at)
    return outcomes


class DatabaseThread:
    """The thread and its queue; `start()` opens the file and migrates, `close()` drains and closes."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.locks = LockWait(path, lock_wait_s())

    async def start(self) -> None:
        """Open the file in the thread, set WAL, run pending migrations."""
        if self._thread is not None:
            return
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        thread = threading.Thread(target=self._serve, args=(loop, ready), name=f"store:{self.path.name}", daemon=True)
        thread.start()
        try:
            await ready
        except BaseException:
            await asyncio.to_thread(thread.join)
            raise
        self._thread = thread

    async def close(self) -> None:
        """Finish every queued job, then close the connection (checkpointing the WAL)."""
        thread = self._thread
        if thread is None:
            return
        self._thread = None
        loop = asyncio.get_running_loop()
        stopped: asyncio.Future[None] = loop.create_future()
        self._queue.put(_Job(None, loop, stopped))
        await stopped
        await asyncio.to_thread(thread.join)

    def _serve(self, loop: asyncio.AbstractEventLoop, ready: asyncio.Future[None]) -> None:
        try:
            db = open_reader(self.path) if self.readonly else open_database(self.path)
        except (sqlite3.Error, OSError) as error:  # hand the failure to start(); the thread ends
            message = f"cannot open the debate log at {self.path}: {error} (check DEBATE_DB)"
            _hand_back(loop, ready, None, StoreError(message))
            return
        except BaseException as error:
            _hand_back(loop, ready, None, error)
            return
        _hand_back(loop, ready, None, None)
        carried: _Job | None = None
        while True:
            job = carried or self._queue.get()
            carried = None
            if job.fn is not None and job.write:
                group, carried = self._group(job)
                for queued, (result, error) in zip(group, _run_group(db, group, self.locks), strict=True):
                    _hand_back(queued.loop, queued.future, result, error)
                continue
            result, error = None, None
            try:
                if job.fn is not None:
                    result = _run_in_transaction(db, job.fn, job.write)
                elif self.readonly:
                    db.close()
                else:
                    _optimize(db)
                    db.close()
            except BaseException as exc:
                error = exc
            _hand_back(job.loop, job.future, result, error)
            if job.fn is None:
                return

    def _group(self, first: _Job) -> tuple[list[_Job], _Job | None]:
        """`first` and the writes queued behind it (up to GROUP_MAX), and the next job that is not a write."""
        group = [first]
        while len(group) < GROUP_MAX:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job.fn is None or not job.write:
                return group, job
            group.append(job)
        return group, None

    async def submit(self, fn: Callable[[Database], T], *, write: bool) -> T:
        if self._thread is None:
            raise StoreClosedError()
        if write and self.readonly:
            raise ReadOnlyLogError()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put(_Job(fn, loop, future, write))
        return await future
