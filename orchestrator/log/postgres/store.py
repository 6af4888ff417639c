"""The Postgres dialect and `PostgresLog`: a small connection pool, one transaction per call.

Chosen by `open_log` when DEBATE_DATABASE_URL is set; every operation is the one the SQLite log runs
(../protocol.py). Here a statement's `:name` parameters are spelled `%(name)s` (and a literal `%` doubled),
times are `timestamptz`, flags `boolean`, the insertion order is a `seq` column, a debate's row is locked
`for no key update`, admission holds an advisory lock, and text loses its NULs (Postgres text cannot hold
them). Several processes on several hosts may share one database; a migration another process is
applying is waited for.

Read-only (`debate history`, `show`, …): every connection sets `default_transaction_read_only`, so
the server itself refuses a write; nothing is migrated; a database without the log's tables reads as
an empty log, and one with an older schema is refused with what to run.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from orchestrator.log.dialect import Args, Conn
from orchestrator.log.postgres import schema
from orchestrator.log.postgres.search import search
from orchestrator.log.protocol import DebateLog, Op
from orchestrator.log.records import ReadOnlyLogError, Scope, SearchHit, StoreClosedError, StoreError

T = TypeVar("T")
POOL_SIZE = 16
CONNECT_TIMEOUT_S = 10.0
# how long one read or write waits for a free connection before the log counts as failed (a debate's
# write failing stops the debate): a worker running hundreds of debates on a busy host keeps each
# connection far longer than its queries take, and 10 s failed 1 debate in 6 at 500 per worker
WAIT_S = 60.0
ADMISSION_LOCK = 0x6465_6261_7465_6164  # any fixed bigint, held for one admission's transaction
_PARAMETER = re.compile(r"(?<![:\w]):(\w+)")


def redact_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)


def to_time(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


@functools.lru_cache(maxsize=1024)
def _spelled(sql: str) -> str:
    return _PARAMETER.sub(r"%(\1)s", sql.replace("%", "%%"))


def _clean(args: Args | None) -> Args | None:
    if args is None:
        return None
    return {k: v.replace("\x00", "") if isinstance(v, str) else v for k, v in args.items()}


class PgConn(Conn):
    seq = "seq"
    lock = " for no key update"
    not_final = "not m.final"
    seat_models = ("(select coalesce(json_agg(s.model order by s.position, s.label), '[]')::text from seats s"
                   " where s.debate_id = d.id)")

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self.conn = conn

    async def rows(self, sql: str, args: Args | None = None, *, prepare: bool | None = None) -> list[dict[str, Any]]:
        async with self.conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(_spelled(sql), _clean(args), prepare=prepare)
            return await cur.fetchall()

    async def values(self, sql: str, args: Args | None = None) -> list[Any]:
        cur = await self.conn.execute(_spelled(sql), _clean(args))
        return [r[0] for r in await cur.fetchall()] if cur.description else []

    async def executemany(self, sql: str, args: Sequence[Args]) -> None:
        async with self.conn.cursor() as cur:
            await cur.executemany(_spelled(sql), [_clean(a) for a in args])

    def time(self, ts: float | None) -> datetime | None:
        return to_time(ts)

    def epoch(self, value: Any) -> float | None:
        return None if value is None else float(value.timestamp())

    async def lock_admission(self) -> None:
        await self.conn.execute("select pg_advisory_xact_lock(%s)", [ADMISSION_LOCK])

    async def ids_written(self, tables: Sequence[str]) -> None:
        for table in tables:  # the identity sequences move past the ids written explicitly
            await self.conn.execute(f"select setval(pg_get_serial_sequence('{table}', 'id'),"
                                    f" greatest((select max(id) from {table}), 1))")

    async def search(self, query: str, limit: int, scope: Scope | None) -> list[SearchHit]:
        return await search(self, self.conn, query, limit, scope)


class PostgresLog(DebateLog):
    """The Postgres `DebateLog`. `async with PostgresLog(url) as log:` or `start()` / `close()`."""

    def __init__(self, url: str, *, runner: str | None = None, readonly: bool = False) -> None:
        self.url = url
        self.runner = runner
        self.readonly = readonly
        self._pool: AsyncConnectionPool[Any] | None = None
        self._empty = False  # read-only on a database the log has never been written to

    async def start(self) -> None:
        """Connect, and bring the schema up to date (a writer) or check it (a reader)."""
        if self._pool is not None:
            return
        kwargs: dict[str, Any] = {"autocommit": True}
        if self.readonly:
            kwargs["options"] = "-c default_transaction_read_only=on"
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self.url, min_size=1, max_size=POOL_SIZE, kwargs=kwargs, open=False, timeout=CONNECT_TIMEOUT_S,
            name="debate-log")
        try:
            # one plain connection first: a wrong URL fails at once with the server's own words
            async with await psycopg.AsyncConnection.connect(
                    self.url, connect_timeout=int(CONNECT_TIMEOUT_S), **kwargs) as conn:
                await (self._check(conn) if self.readonly else schema.migrate(conn))
            await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except (PoolTimeout, psycopg.Error) as error:
            await pool.close()
            raise StoreError(f"cannot open the debate log at {redact_url(self.url)}: {error}"
                             " (check DEBATE_DATABASE_URL)") from error
        except BaseException:
            await pool.close()
            raise
        self._pool = pool

    async def _check(self, conn: AsyncConnection[Any]) -> None:
        done = await schema.applied(conn)
        self._empty = not done
        if done and [n for n in schema.migration_names("postgres") if n not in done]:
            raise StoreError(f"the debate log at {redact_url(self.url)} uses an older schema; run `debate serve` or "
                             "`debate run` once to upgrade it")

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _run(self, fn: Op[T], *, transaction: bool = True) -> T:
        """`fn` on a pooled connection, in a transaction of its own unless told (the connection is in autocommit)."""
        if self._pool is None:
            raise StoreClosedError()
        async with self._pool.connection(timeout=WAIT_S) as conn:
            if not transaction:
                return await fn(PgConn(conn))
            async with conn.transaction():
                return await fn(PgConn(conn))

    async def _write(self, fn: Op[T]) -> T:
        if self.readonly:
            raise ReadOnlyLogError()
        return await self._run(fn)

    async def _read(self, fn: Op[T], empty: T) -> T:
        if self._empty and self._pool is not None:
            return empty
        return await self._run(fn)

    async def _read_one_statement(self, fn: Op[T], empty: T) -> T:
        """On a connection in autocommit, no BEGIN and COMMIT around the statement (search: ~1.5 ms
        of round trips saved of ~15)."""
        if self._empty and self._pool is not None:
            return empty
        return await self._run(fn, transaction=False)
