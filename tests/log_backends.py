"""Both `DebateLog` implementations behind one test interface, so the log tests run against each.

`LogBackend.open()` gives a log handle (several handles on one backend are several processes sharing
the log); `sql()` and `insert()` reach the storage through a connection of their own, as another
process or an operator would. SQL is written with `?` placeholders and SQLite's values (ISO text
times, 0/1 flags); the Postgres side converts both.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from orchestrator.log import DebateLog, open_log

BOOLEAN_COLUMNS = {"channel_private", "split", "final", "tokens_estimated"}

_PG_FAIL_TURNS = """
create function fail_turn_insert() returns trigger language plpgsql as $$
begin raise exception 'database or disk is full'; end $$;
create trigger full_disk before insert on turns for each row execute function fail_turn_insert();
"""
_SQLITE_FAIL_TURNS = ("create trigger full before insert on turns begin "
                      "select raise(abort, 'database or disk is full'); end")


@dataclass
class LogBackend:
    name: str  # "sqlite" or "postgres"
    target: str  # a file path or a postgresql:// URL: what DEBATE_DB / DEBATE_DATABASE_URL would hold

    @property
    def env(self) -> dict[str, str]:
        """The environment a `debate` subprocess needs to use this log."""
        return {"DEBATE_DATABASE_URL": self.target} if self.name == "postgres" else {"DEBATE_DB": self.target}

    def open(self, *, runner: str | None = None, readonly: bool = False) -> DebateLog:
        return open_log(self.target if self.name == "postgres" else Path(self.target), runner=runner,
                        readonly=readonly)

    def sql(self, statement: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self.name == "sqlite":
            conn = sqlite3.connect(self.target, timeout=5)
            try:
                with conn:
                    cursor = conn.execute(statement, list(args))
                    return cursor.fetchall() if cursor.description else []
            finally:
                conn.close()
        with psycopg.connect(self.target, autocommit=True) as pg:
            cur = pg.execute(statement.replace("?", "%s"), list(args) if args else None)
            return cur.fetchall() if cur.description else []

    def insert(self, table: str, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        columns = list(rows[0])
        names = ", ".join(f'"{c}"' for c in columns)
        if self.name == "sqlite":
            conn = sqlite3.connect(self.target, timeout=5)
            try:
                with conn:
                    conn.executemany(f"insert into {table} ({names}) values ({', '.join('?' for _ in columns)})",
                                     [[r.get(c) for c in columns] for r in rows])
            finally:
                conn.close()
            return
        values = [[bool(r.get(c)) if c in BOOLEAN_COLUMNS and r.get(c) is not None else r.get(c) for c in columns]
                  for r in rows]
        casts = ", ".join("%s::timestamptz" if c in ("created_at", "finished_at", "at", "started_at") else "%s"
                          for c in columns)
        with psycopg.connect(self.target, autocommit=True) as pg, pg.cursor() as cur:
            cur.executemany(f"insert into {table} ({names}) values ({casts})", values)

    def fail_turn_writes(self) -> None:
        """From another connection, make every turn insert fail the way a full disk does."""
        self.sql(_SQLITE_FAIL_TURNS if self.name == "sqlite" else _PG_FAIL_TURNS)

    def turn_text_matches(self, word: str) -> int:
        """How many turns the backend's own full-text index finds for `word`."""
        if self.name == "sqlite":
            return int(self.sql("select count(*) from turns_fts where turns_fts match ?", [word])[0][0])
        return int(self.sql("select count(*) from turns where text_tsv @@ debate_tsquery(?)", [word])[0][0])
