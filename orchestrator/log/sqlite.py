"""The SQLite dialect: one file, the thread that owns its connection, FTS5 recall; and `Store`, its log.

Every operation runs in the database thread (writer_thread.py) in one transaction (IMMEDIATE for a
write, so the write lock is taken up front and admission counts with the database held). Reads go
through the same thread: one connection means every read sees every write awaited before it. The
operations are coroutines over `Conn` (dialect.py); here they never suspend, so the thread drives each
to its end in one `send`. Times are ISO text, flags 0/1, the insertion order is the rowid.
"""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlite_utils import Database

from orchestrator.log.dialect import Answered, Args, Conn, Sent, TableColumns
from orchestrator.log.protocol import DebateLog, Op
from orchestrator.log.reads import scope_sql
from orchestrator.log.records import HitWhere, Scope, SearchHit, from_iso, to_iso
from orchestrator.log.search import SNIPPET_TOKENS, ranked
from orchestrator.log.writer_thread import DatabaseThread

log = logging.getLogger(__name__)
T = TypeVar("T")


@functools.lru_cache(maxsize=1024)
def _spelled(sql: str) -> str:
    return sql.replace(" is not distinct from ", " is ")  # the same operator, the spelling older SQLites read


class SqliteConn(Conn):
    seq = "rowid"
    lock = ""  # the IMMEDIATE transaction holds the whole database
    not_final = "m.final = 0"
    seat_models = ("(select json_group_array(model) from (select model from seats s where s.debate_id = d.id"
                   " order by position, label))")

    def __init__(self, db: Database) -> None:
        self.db = db

    async def send(self, sql: str, args: Args | None = None, *, prepare: bool | None = None) -> Sent:
        cursor = self.db.conn.execute(_spelled(sql), args or {})
        if cursor.description is None:
            return Answered([], [])
        return Answered([d[0] for d in cursor.description], cursor.fetchall())

    async def executemany(self, sql: str, args: Sequence[Args]) -> None:
        self.db.conn.executemany(_spelled(sql), args)

    def time(self, ts: float | None) -> str | None:
        return to_iso(ts)

    def epoch(self, value: Any) -> float | None:
        return from_iso(value)

    async def lock_admission(self) -> None:
        return None  # the IMMEDIATE transaction already excludes every other writer

    async def tables(self) -> list[TableColumns]:
        """FTS5 tables (and their shadow tables) are kept by triggers on the tables they index: left out."""
        listed = self.db.conn.execute("select name, sql from sqlite_master where type = 'table'"
                                      " and name not like 'sqlite_%' and name != '_sqlite_migrations'"
                                      " order by name").fetchall()
        virtual = [name for name, sql in listed if (sql or "").lower().startswith("create virtual table")]
        found = []
        for name, _ in listed:
            if any(name == v or name.startswith(v + "_") for v in virtual):
                continue
            info = self.db.conn.execute("select name, upper(type) from pragma_table_info(?) order by cid",
                                        [name]).fetchall()
            found.append(TableColumns(name, tuple(c for c, _ in info),
                                      tuple(c for c, kind in info if kind in ("", "TEXT"))))
        return found

    async def search(self, query: str, limit: int, scope: Scope | None) -> list[SearchHit]:
        """Ranking trade-off: bm25 costs time per matching row, so in each FTS table only the newest
        `SEARCH_RECENT_MATCHES` matches compete (FTS5 walks its index newest-first and stops there). A
        query with fewer matches than that is ranked over the whole log; a very common one returns the best
        among its recent matches. Scores stay comparable either way (bm25's IDF counts every match)."""
        for fts_query in fts_queries(self.db, query):
            try:
                return await ranked(self, FTS_SOURCES, fts_query, limit, scope)
            except sqlite3.OperationalError as error:  # an FTS syntax corner quote_fts missed
                log.info("search query %r rejected by FTS (%s); retrying with words only", query[:80], error)
        return []


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run an operation that never suspends (every `SqliteConn` call returns at once) to its result."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a log operation awaited something other than its database")


# -- full-text search: FTS5 tables kept by triggers, bm25 ---------------------------------------------


@dataclass(frozen=True)
class _Fts:
    where: HitWhere
    name: str  # the FTS table
    join: str  # joins the FTS row `{row}` to its debate as `d`

    def candidates_sql(self, scope: Scope | None) -> str:
        """`order by rowid desc limit :window` walks the FTS index in its own order and stops, so only
        those rows are scored; bm25's IDF still counts every match in the table. The scope joins in
        before that limit, so a tenant's matches compete among themselves, not against the whole log."""
        visible, _ = scope_sql(scope)
        join, where = ("", "") if scope is None else (self.join.format(row=f"{self.name}.rowid"), f"and {visible}")
        return f"""
            with recent as (
                select {self.name}.rowid as rowid, bm25({self.name}) as score from {self.name} {join}
                where {self.name} match :query {where} order by {self.name}.rowid desc limit :window
            ),
            best as (select rowid, score from recent order by score, rowid desc limit :limit)
            select best.rowid as key, best.score as score, d.id, d.topic, d.created_at, d.status
            from best {self.join.format(row="best.rowid")}"""

    def snippets(self, query: str, keys: list[Any]) -> tuple[str, Args]:
        """One pass over the matches between `:lo` and `:hi` (a scan bound for FTS5); `+rowid in (…)` is
        kept out of it (a lookup per rowid costs a doclist seek each)."""
        return f"""
            select rowid as key, snippet({self.name}, -1, '[', ']', '…', {SNIPPET_TOKENS}) as snippet
            from {self.name} where {self.name} match :query and rowid between :lo and :hi
              and +rowid in (select value from json_each(:rowids))""", {
            "query": query, "lo": min(keys), "hi": max(keys), "rowids": json.dumps(keys)}


FTS_SOURCES: tuple[_Fts, ...] = (
    _Fts("topic", "debates_fts", "join debates d on d.rowid = {row}"),
    _Fts("turn", "turns_fts", "join turns t on t.id = {row} join debates d on d.id = t.debate_id"),
    _Fts("recommendation", "verdicts_fts", "join verdicts v on v.rowid = {row} join debates d on d.id = v.debate_id"),
    _Fts("source", "sources_fts", "join sources b on b.rowid = {row} join debates d on d.id = b.debate_id"),
)


def fts_queries(db: Database, query: str) -> list[str]:
    """The quoted query (every token a literal phrase, sqlite-utils `quote_fts`), then a words-only fallback."""
    words = "".join(ch if ch.isalnum() else " " for ch in query).split()
    return [q for q in (db.quote_fts(query), " ".join(f'"{w}"' for w in words)) if q.strip()]




class Store(DebateLog):
    """The SQLite `DebateLog`. `async with Store(path) as store:` or `start()` / `close()`."""

    def __init__(self, path: str | Path, *, runner: str | None = None, readonly: bool = False) -> None:
        self.path = Path(path)
        self.runner = runner
        self._db = DatabaseThread(self.path, readonly=readonly)

    async def start(self) -> None:
        """Open the file in the database thread (a writer: WAL, pending migrations)."""
        await self._db.start()

    async def close(self) -> None:
        """Finish every queued job, then close the connection (checkpointing the WAL)."""
        await self._db.close()

    async def _write(self, fn: Op[T]) -> T:
        return await self._db.submit(lambda db: drive(fn(SqliteConn(db))), write=True)  # type: ignore[arg-type]

    async def _read(self, fn: Op[T], empty: T) -> T:
        return await self._db.submit(lambda db: drive(fn(SqliteConn(db))), write=False)  # type: ignore[arg-type]
