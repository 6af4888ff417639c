"""The Postgres dialect and `PostgresLog`: a small connection pool, one transaction per call.

Chosen by `open_log` when DEBATE_DATABASE_URL is set, it runs every operation the SQLite log runs (../protocol.py),
in Postgres's spelling, and several processes on several hosts may share one database. A connection the server
closed (a restart, a failover) fails no operation: it runs again on a fresh one until the server has been away for
OUTAGE_S.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection, AsyncCursor, AsyncPipeline
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from orchestrator.log.dialect import Args, Conn, Sent, TableColumns
from orchestrator.log.postgres import schema
from orchestrator.log.postgres.search import search
from orchestrator.log.protocol import DebateLog, Op
from orchestrator.log.records import (
    DebateNotFoundError,
    LogUnavailableError,
    ReadOnlyLogError,
    Scope,
    SearchHit,
    StoreClosedError,
    StoreError,
)

T = TypeVar("T")
log = logging.getLogger(__name__)
# Connections a process keeps to the log. A write holds one for its one round trip, so a few serve hundreds
# of debates, and every backend more costs the server: at a burst the pool grows (a backend started, its
# caches and plans warmed, inside the burst), and each statement's snapshot and scheduling cost grow with the
# backends running.
POOL_SIZE = 4
CONNECT_TIMEOUT_S = 10.0
# how long one read or write waits for a free connection before the log counts as failed (a debate's
# write failing stops the debate): a worker running hundreds of debates on a busy host keeps each
# connection far longer than its queries take, and 10 s failed 1 debate in 6 at 500 per worker
WAIT_S = 60.0
OUTAGE_S = 300.0  # how long an operation waits, over its tries, for a server that closed or refuses connections
RETRY_PAUSES_S = (0.05, 2.0)  # the first pause between tries once the pool's connections were tried, the longest
ADMISSION_LOCK = 0x6465_6261_7465_6164  # any fixed bigint, held for one admission's transaction
_PARAMETER = re.compile(r"(?<![:\w]):(\w+)")


def redact_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)


def to_time(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


@functools.lru_cache(maxsize=1024)
def _spelled(sql: str) -> str:
    """The log's statement in psycopg's spelling: each `:name` parameter as `%(name)s`, a literal `%` doubled."""
    return _PARAMETER.sub(r"%(\1)s", sql.replace("%", "%%"))


def connection_lost(error: BaseException) -> bool:
    """The server closed the connection or cannot be reached (as DBOS's `retriable_postgres_exception` reads
    it): the operation did not happen and may run again on another connection. A query the server cancelled
    (57014) or a refusal of the statement itself is not."""
    if isinstance(error, PoolTimeout):  # no connection could be made (or freed) in time
        return True
    if not isinstance(error, psycopg.OperationalError):
        return False
    code = error.sqlstate or ""
    if code == "57014":
        return False
    # 08…: connection exceptions; 57P01–57P03: terminated, crashed, starting up; 53…: out of resources;
    # no code: the client saw the socket close ("server closed the connection unexpectedly", "the connection
    # is lost", "connection failed")
    return not code or code.startswith(("08", "57P", "53"))


def _clean(args: Args | None) -> Args | None:
    """The arguments with NULs taken out of their text: Postgres text cannot hold them."""
    if args is None:
        return None
    return {k: v.replace("\x00", "") if isinstance(v, str) else v for k, v in args.items()}


class PgConn(Conn):
    """A pooled connection in autocommit, each statement waited for; inside `begin` … `commit` (or
    `abandon`), one transaction in pipeline mode, statements sent without waiting (../dialect.py).

    No BEGIN or COMMIT is sent for a transaction that needs no answer before its end (most writes): what
    a pipeline sends up to its Sync is one implicit transaction in Postgres's protocol, committed at the Sync
    and rolled back whole if a statement fails. A transaction that waits for an answer half-way sends BEGIN
    before that Sync, which makes what it sent so far the start of an explicit transaction, and COMMIT at the
    end. Two statements fewer for most writes, on the client and on the server."""

    seq = "seq"
    lock = " for no key update"
    modifying_ctes = True
    not_final = "not m.final"
    seat_models = ("(select coalesce(json_agg(s.model order by s.position, s.label), '[]')::text from seats s"
                   " where s.debate_id = d.id)")

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self.conn = conn
        self._pipeline: AsyncPipeline | None = None
        self._leave: AsyncExitStack | None = None  # leaves pipeline mode: sends a Sync, reads every answer
        self._over = False
        self._explicit = False  # BEGIN sent: the transaction outlives a Sync, and ends with COMMIT or ROLLBACK
        self._sent: list[tuple[AsyncCursor[Any], str | None]] = []  # each statement, with its debate if a lock
        self._referenced: str | None = None  # `send_debate_exists`: the debate a foreign key refusal is about

    async def begin(self) -> None:
        leave = AsyncExitStack()
        self._pipeline = await leave.enter_async_context(self.conn.pipeline())
        self._leave = leave

    async def commit(self) -> None:
        if self._leave is None or self._over:
            return
        self._over = True
        if self._explicit:
            await self.conn.execute("commit", prepare=False)
        await self._end_pipeline()  # its Sync commits an implicit transaction

    async def abandon(self) -> None:
        """After an error: nothing the transaction sent stays."""
        self._over = True
        if self._leave is not None:
            with contextlib.suppress(psycopg.Error):  # the error raised already is the one that counts
                if not self._explicit:  # else the Sync would commit what was sent: made explicit, then undone
                    await self.conn.execute("begin", prepare=False)
                await self.conn.execute("rollback", prepare=False)
            with contextlib.suppress(psycopg.Error):
                await self._end_pipeline()
        with contextlib.suppress(psycopg.Error):  # a broken connection: the pool replaces it
            await self.conn.rollback()

    async def _end_pipeline(self) -> None:
        leave, self._leave, self._pipeline = self._leave, None, None
        if leave is not None:
            await leave.aclose()

    async def wait(self) -> None:
        """Everything sent so far answered (one round trip in a pipeline; outside one it is already)."""
        if self._pipeline is not None:
            if not self._explicit and not self._over:  # the Sync must not end the transaction
                self._explicit = True
                await self.conn.execute("begin", prepare=False)
            await self._pipeline.sync()

    @contextlib.contextmanager
    def locks_read(self) -> Iterator[None]:
        """A `send_lock` that failed (whenever its answer came in), or a row refused by its foreign key after
        `send_debate_exists`, raises DebateNotFoundError."""
        try:
            yield
        except psycopg.errors.ForeignKeyViolation as error:
            if self._referenced is not None:
                raise DebateNotFoundError(self._referenced) from error
            raise
        except psycopg.errors.DivisionByZero as error:
            for cur, debate_id in self._sent:
                if cur.pgresult is None:  # the first statement without an answer is the one that failed
                    if debate_id is not None:
                        raise DebateNotFoundError(debate_id) from error
                    break
            raise

    def _still_open(self) -> None:
        if self._over:
            raise RuntimeError("the transaction has ended: nothing more can be sent in it")

    async def send(self, sql: str, args: Args | None = None, *, prepare: bool | None = None) -> Sent:
        return await self._send(sql, args, prepare)

    async def _send(self, sql: str, args: Args | None, prepare: bool | None, debate_id: str | None = None) -> Sent:
        self._still_open()
        cur = self.conn.cursor()
        self._sent.append((cur, debate_id))
        await cur.execute(_spelled(sql), _clean(args), prepare=prepare)
        return _Pending(self, cur)

    async def send_lock(self, debate_id: str) -> Sent:
        # an unknown debate divides by zero: the error fails the transaction in the server, so nothing sent
        # after it applies, and `locks_read` reads it as DebateNotFoundError
        return await self._send("select max(status) as status, 1 / count(*) as found from"
                                f" (select status from debates where id = :id{self.lock}) d",
                                {"id": debate_id}, None, debate_id)

    async def send_debate_exists(self, debate_id: str) -> None:
        # no statement: every row the write sends refers to the debate, so its foreign key refuses the
        # write (and with it the whole transaction) when the debate is unknown, and `locks_read` says so
        self._referenced = debate_id

    async def executemany(self, sql: str, args: Sequence[Args]) -> None:
        self._still_open()
        await self.conn.cursor().executemany(_spelled(sql), [_clean(a) for a in args])

    def time(self, ts: float | None) -> datetime | None:
        return to_time(ts)

    def epoch(self, value: Any) -> float | None:
        return None if value is None else float(value.timestamp())

    async def lock_admission(self) -> None:
        await self.send("select pg_advisory_xact_lock(:lock)", {"lock": ADMISSION_LOCK})

    async def tables(self) -> list[TableColumns]:
        """The search vectors are generated columns of the tables they index: left out of the text columns."""
        rows = await self.rows(
            "select table_name as name, column_name as col, data_type in ('text', 'character varying') and"
            " is_generated = 'NEVER' as text from information_schema.columns c where table_schema = current_schema()"
            " and table_name != :migrations and exists (select 1 from information_schema.tables t where"
            " t.table_schema = c.table_schema and t.table_name = c.table_name and t.table_type = 'BASE TABLE')"
            " order by table_name, ordinal_position", {"migrations": schema.MIGRATIONS_TABLE})
        columns: dict[str, list[tuple[str, bool]]] = {}
        for row in rows:
            columns.setdefault(row["name"], []).append((row["col"], bool(row["text"])))
        return [TableColumns(name, tuple(c for c, _ in cols), tuple(c for c, text in cols if text))
                for name, cols in columns.items()]

    async def ids_written(self, tables: Sequence[str]) -> None:
        for table in tables:  # the identity sequences move past the ids written explicitly
            await self.send(f"select setval(pg_get_serial_sequence('{table}', 'id'),"
                            f" greatest((select max(id) from {table}), 1))")

    async def search(self, query: str, limit: int, scope: Scope | None) -> list[SearchHit]:
        return await search(self, self.conn, query, limit, scope)


class _Pending(Sent):
    def __init__(self, owner: PgConn, cur: AsyncCursor[Any]) -> None:
        self.owner = owner
        self.cur = cur

    async def answer(self) -> tuple[list[str], Sequence[Sequence[Any]]]:
        if self.cur.pgresult is None:
            await self.owner.wait()
        if self.cur.description is None:
            return [], []
        return [column.name for column in self.cur.description], await self.cur.fetchall()


class PostgresLog(DebateLog):
    """The Postgres `DebateLog`. `async with PostgresLog(url) as log:` or `start()` / `close()`.

    `readonly` (`debate history`, `show`, …): every connection sets `default_transaction_read_only`, so the server
    itself refuses a write; nothing is migrated; a database without the log's tables reads as an empty log, and one
    with an older schema is refused with what to run."""

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
        """`_run_once`, again on a fresh connection while the server has closed or refuses connections
        (`connection_lost`), until it has been away for OUTAGE_S; then LogUnavailableError. As DBOS's own
        `db_retry` does for the workflow side: every operation is one transaction the lost connection rolled
        back (or a repeat the log recognises: an admission, a debate created, a message recorded). The pool drops
        a broken connection but the others it holds may be broken too, so the first tries follow at once."""
        started = time.monotonic()
        tries, pause = 0, RETRY_PAUSES_S[0]
        while True:
            try:
                return await self._run_once(fn, transaction=transaction)
            except Exception as error:
                if not connection_lost(error) or self._pool is None:
                    raise
                tries += 1
                away = time.monotonic() - started
                if away >= OUTAGE_S:
                    raise LogUnavailableError(
                        f"the debate log's database stayed unreachable for {away:.0f} s") from error
                log.warning("log: the connection to %s was lost (%s); trying again (%d)", redact_url(self.url),
                            type(error).__name__, tries)
            if tries > POOL_SIZE:  # every connection the pool held has been tried: the server is away
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_PAUSES_S[1])

    async def _run_once(self, fn: Op[T], *, transaction: bool = True) -> T:
        """`fn` on a pooled connection, in a transaction of its own unless told (the connection is in autocommit)."""
        if self._pool is None:
            raise StoreClosedError()
        async with self._pool.connection(timeout=WAIT_S) as conn:
            c = PgConn(conn)
            with c.locks_read():
                if not transaction:
                    return await fn(c)
                try:
                    await c.begin()
                    result = await fn(c)
                    await c.commit()
                except BaseException:
                    await c.abandon()
                    raise
                return result

    async def _write(self, fn: Op[T]) -> T:
        if self.readonly:
            raise ReadOnlyLogError()
        return await self._run(fn)

    async def _write_one_statement(self, fn: Op[T]) -> T:
        """The statement alone, in autocommit: no BEGIN, no COMMIT, no pipeline around it (a front records
        every message it posts this way)."""
        if self.readonly:
            raise ReadOnlyLogError()
        return await self._run(fn, transaction=False)

    async def _read(self, fn: Op[T], empty: T) -> T:
        if self._empty and self._pool is not None:
            return empty
        return await self._run(fn)

    async def _read_one_statement(self, fn: Op[T], empty: T) -> T:
        """On a connection in autocommit, no BEGIN and COMMIT around the statement: two round trips fewer."""
        if self._empty and self._pool is not None:
            return empty
        return await self._run(fn, transaction=False)
