"""Postgres: statements of a DBOS system database sent from the event loop (async psycopg), not from
DBOS's thread pool.

On Postgres a step's check, its record and a stream write are one statement each in autocommit
(dbos_step_records.py, dbos_stream_writes.py): ~5 a model call. Sent from DBOS's pool, each cost the worker
~0.24–0.31 ms of CPU on the client's side (the hop to a thread and back, the GIL changing hands, SQLAlchemy's
checkout and execution); from the loop, through a few async connections of psycopg's pool to the same
database, ~0.12–0.14 ms (bench/pg_loop_statements.py). The wait for the server is the loop's. psycopg prepares
a statement run often, as it does on DBOS's engine.

Failures retry as DBOS's `db_retry` retries: a connection error or no free connection, with backoff, until
it goes through (unless the system database opts out: `retry_connection_errors=False`). There is no ping
before a use, as on DBOS's engine here (config.py): a connection the server dropped fails when used, the
pool discards it, and the retry takes a fresh one at once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import weakref
from typing import Any

import psycopg
from dbos._sys_db import SystemDatabase
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

log = logging.getLogger(__name__)

POOL_MAX = 2  # connections a process's loop keeps: a write holds one for its round trip (~0.3 ms); few, as
# every backend more costs the server (orchestrator/log/postgres/store.py POOL_SIZE)
CONNECT_TIMEOUT_S = 10  # as DBOS's own connections
WAIT_S = 30.0  # for a free connection, then retried as DBOS retries an exhausted pool
BACKOFF_S = (1.0, 60.0)  # DBOS's db_retry: the first wait (± half, at random), doubled up to the second


def conninfo(sys_db: SystemDatabase) -> str:
    """The libpq URL of the system database's engine (its password kept: it is a connection's, not a message's)."""
    return sys_db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def retried(exc: BaseException) -> bool:
    """A failure DBOS's retry waits out: the connection's (lost, refused, timed out, the server short of
    resources or shutting down), not the statement's; a cancelled statement is not retried."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.OperationalError) or isinstance(exc, psycopg.errors.QueryCanceled):
        return False
    code = exc.sqlstate or ""
    return not code or code.startswith(("08", "53", "57"))


class LoopStatements:
    """Statements of one system database from the running loop, each in autocommit (Postgres only)."""

    def __init__(self, sys_db: SystemDatabase, *, hooks: dict[str, Any] | None = None, reopen: bool = True) -> None:
        self.sys_db = sys_db
        # after `close` on a loop, a statement there opens the pool again (a step's write late in a shutdown),
        # or, not to `reopen`, raises PoolClosed: a pool left open when the loop ends can hang its last
        # task cancellation (psycopg_pool's maintenance worker outlives a cancel that lands mid-task)
        self._reopen = reopen
        self._hooks = hooks or {}  # the pool's `configure` and `reset` callbacks (a test traces the connections)
        self._pools: dict[asyncio.AbstractEventLoop, AsyncConnectionPool] = {}
        self._closed: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
        _all.add(self)

    async def rowcount(self, sql: str, params: Any, *, retry: bool = True) -> int:
        """Run `sql` with the driver's `params` in autocommit; the rows it wrote. Connection failures are
        waited out (see the module) unless not to `retry`; any other error is raised."""
        count, _rows = await self._run(sql, params, fetch=False, retry=retry)
        return count

    async def rows(self, sql: str, params: Any, *, retry: bool = True) -> list[tuple[Any, ...]]:
        """`rowcount`'s statement, giving back the rows it returns."""
        _count, rows = await self._run(sql, params, fetch=True, retry=retry)
        return rows

    async def _run(self, sql: str, params: Any, *, fetch: bool,
                   retry: bool = True) -> tuple[int, list[tuple[Any, ...]]]:
        pause = BACKOFF_S[0]
        fresh = True  # the first failure of a connection may be a dropped one: try a new one at once
        while True:
            pool = await self._pool()
            try:
                async with pool.connection(timeout=WAIT_S) as conn:
                    cursor = await conn.execute(sql, params)
                    return cursor.rowcount, (await cursor.fetchall() if fetch else [])
            except Exception as exc:
                if not retry or not retried(exc) or not getattr(self.sys_db, "_retry_connection_errors", True):
                    raise
                if fresh and not isinstance(exc, PoolTimeout):
                    fresh = False
                    continue
                wait = pause * (0.5 + random.random())
                log.warning("system database unreachable (%s): retrying in %.2f s", exc, wait)
                await asyncio.sleep(wait)
                pause = min(pause * 2, BACKOFF_S[1])

    async def _pool(self) -> AsyncConnectionPool:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            if not self._reopen and loop in self._closed:
                raise PoolClosed("the loop's connections to the system database are closed")
            self._closed.discard(loop)
            pool = self._pools[loop] = AsyncConnectionPool(
                conninfo(self.sys_db), min_size=1, max_size=POOL_MAX, open=False, **self._hooks,
                kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S}, name="dbos-loop-statements")
            await pool.open()
        return pool

    async def close(self) -> None:
        """Close the pool of the running loop (those of loops gone went with them)."""
        loop = asyncio.get_running_loop()
        self._closed.add(loop)
        pool = self._pools.pop(loop, None)
        if pool is not None:
            await pool.close()

    def closed_here(self) -> bool:
        """Whether `close` ran on the running loop and no statement opened the pool again since."""
        return asyncio.get_running_loop() in self._closed


_all: weakref.WeakSet[LoopStatements] = weakref.WeakSet()


async def close_all() -> None:
    """Close every pool this loop opened (a worker stopping, before DBOS shuts down)."""
    for statements in list(_all):
        await statements.close()
