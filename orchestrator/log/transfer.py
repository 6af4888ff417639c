"""`debate migrate-log`: copy a whole debate log between SQLite and Postgres, either way.

Row by row, table by table (debates first, so every foreign key finds its debate), with every id
kept: debate ids, turn and notice ids, votes per user, platform message ids, the tenancy columns,
every numbered verdict, audience notes (with the round each reached), segments, rematch links,
each channel's defaults, and who holds each running slot and asked for each continuation. Each
row is an upsert on its key, so running the copy again updates what is there and adds what is
new; nothing is deleted in the target. The target is brought to the current schema first; the
source is only read, and must be on the current schema (`debate serve` once upgrades it). Values
cross in one neutral form: times as UTC datetimes, flags as booleans. Request keys (a day of
retried-delivery ids) and the fronts' leases on workspaces (`thread_renderers`, which front renders
a workspace's threads) are not copied. Full-text indexes follow by themselves (SQLite's triggers,
Postgres's generated columns).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from orchestrator.log.opening import is_postgres_url, open_log
from orchestrator.log.records import StoreError, from_iso, to_iso

BATCH = 500
# table, its key, what orders its rows (parents before children, old before new)
TABLES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("debates", ("id",), "created_at, id"),
    ("seats", ("debate_id", "label"), "debate_id, position"),
    ("turns", ("id",), "id"),
    ("verdicts", ("debate_id", "number"), "debate_id, number"),
    ("votes", ("debate_id", "user"), "debate_id, \"user\""),
    ("messages", ("debate_id", "key"), "debate_id, key"),
    ("notices", ("id",), "id"),
    ("interjections", ("id",), "at, id"),
    ("channel_settings", ("platform", "workspace", "channel"), "platform, workspace, channel"),
    ("continuations", ("debate_id", "segment"), "debate_id, segment"),
    ("model_calls", ("attempt",), "at, attempt"),
)
TIME_COLUMNS = {"created_at", "finished_at", "started_at", "at", "updated_at", "held_since"}
FLAG_COLUMNS = {"channel_private", "split", "final"}
POSTGRES_ONLY = {"seq", "topic_tsv", "text_tsv", "recommendation_tsv"}  # generated there, never copied


class Copied(BaseModel):
    """Rows written to the target, per table."""

    tables: dict[str, int]

    def text(self) -> str:
        return ", ".join(f"{n} {table}" for table, n in self.tables.items())


def _neutral(column: str, value: Any) -> Any:
    if value is None:
        return None
    if column in TIME_COLUMNS and isinstance(value, str):
        ts = from_iso(value)
        return None if ts is None else datetime.fromtimestamp(ts, UTC)
    if column in FLAG_COLUMNS and isinstance(value, int):
        return bool(value)
    return value


def _for_sqlite(column: str, value: Any) -> Any:
    if isinstance(value, datetime):
        return to_iso(value.timestamp())
    if isinstance(value, bool):
        return int(value)
    return value


class _SQLiteSide:
    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, timeout=5)

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self.conn.execute(f"pragma table_info({table})")]

    def read(self, table: str, order: str) -> Iterator[list[dict[str, Any]]]:
        cursor = self.conn.execute(f"select * from {table} order by {order}")
        names = [c[0] for c in cursor.description]
        while batch := cursor.fetchmany(BATCH):
            yield [{n: _neutral(n, v) for n, v in zip(names, row, strict=True)} for row in batch]

    def write(self, table: str, key: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
        columns = list(rows[0])
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c not in key) or f'"{key[0]}" = "{key[0]}"'
        quoted = ", ".join(f'"{c}"' for c in columns)
        keys = ", ".join(f'"{k}"' for k in key)
        with self.conn:
            self.conn.executemany(
                f"insert into {table} ({quoted}) values ({', '.join('?' for _ in columns)})"
                f" on conflict ({keys}) do update set {sets}",
                [[_for_sqlite(c, r[c]) for c in columns] for r in rows])

    def finish(self) -> None:
        self.conn.close()


class _PostgresSide:
    def __init__(self, url: str) -> None:
        import psycopg  # only a Postgres copy needs the driver

        self.conn = psycopg.connect(url, autocommit=True)

    def columns(self, table: str) -> list[str]:
        cur = self.conn.execute("select column_name from information_schema.columns where table_name = %s"
                                " and table_schema = current_schema() order by ordinal_position", [table])
        return [r[0] for r in cur.fetchall() if r[0] not in POSTGRES_ONLY]

    def read(self, table: str, order: str) -> Iterator[list[dict[str, Any]]]:
        from psycopg.rows import dict_row

        names = ", ".join(f'"{c}"' for c in self.columns(table))
        with self.conn.transaction(), self.conn.cursor(name=f"copy_{table}", row_factory=dict_row) as cur:
            cur.execute(f"select {names} from {table} order by {order}")
            while batch := cur.fetchmany(BATCH):
                yield batch

    def write(self, table: str, key: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
        columns = list(rows[0])
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c not in key)
        action = f"do update set {sets}" if sets else "do nothing"
        quoted = ", ".join(f'"{c}"' for c in columns)
        keys = ", ".join(f'"{k}"' for k in key)
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.executemany(f"insert into {table} ({quoted}) values ({', '.join('%s' for _ in columns)})"
                            f" on conflict ({keys}) {action}", [[r[c] for c in columns] for r in rows])

    def finish(self) -> None:
        # ids were written explicitly: move the identity sequences past them
        for table in ("turns", "notices"):
            self.conn.execute(f"select setval(pg_get_serial_sequence('{table}', 'id'),"
                              f" greatest((select max(id) from {table}), 1))")
        self.conn.close()


def _side(target: str | Path) -> _SQLiteSide | _PostgresSide:
    return _PostgresSide(str(target)) if is_postgres_url(target) else _SQLiteSide(Path(target))


def _copy(source: str | Path, target: str | Path) -> Copied:
    reader, writer = _side(source), _side(target)
    copied: dict[str, int] = {}
    try:
        for table, key, order in TABLES:
            shared = set(reader.columns(table)) & set(writer.columns(table))
            copied[table] = 0
            for batch in reader.read(table, order):
                rows = [{c: v for c, v in row.items() if c in shared} for row in batch]
                writer.write(table, key, rows)
                copied[table] += len(rows)
    finally:
        reader.finish()
        writer.finish()
    return Copied(tables=copied)


async def migrate_log(source: str | Path, target: str | Path) -> Copied:
    """Copy the log at `source` into `target` (each a SQLite path or a postgresql:// URL)."""
    if str(source) == str(target):
        raise StoreError("the source and the target are the same log")
    if not is_postgres_url(source) and not await asyncio.to_thread(Path(source).exists):
        raise StoreError(f"no debate log at {source}")
    async with open_log(source, readonly=True):  # the source exists and its schema is current
        pass
    async with open_log(target):  # the target's schema, created or brought up to date
        pass
    return await asyncio.to_thread(_copy, source, target)
