"""`debate migrate-log`: copy a whole debate log between SQLite and Postgres, either way.

Table by table (debates first, so every foreign key finds its debate), row by row, with every id kept. Each row is an
upsert on its key, so running the copy again updates what is there and adds what is new; nothing is deleted in the
target. The source is only read; the target is brought to the current schema first.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from orchestrator.log.dialect import Conn
from orchestrator.log.opening import is_postgres_url, open_log
from orchestrator.log.protocol import DebateLog
from orchestrator.log.records import StoreError

BATCH = 500
# table, its key, what orders its rows (parents before children, old before new). Not copied: request keys (a day
# of retried-delivery ids) and the leases: `thread_renderers` (which front renders a workspace's threads) and
# `maintenance` (the periodic passes'). Full-text indexes follow by themselves (SQLite's triggers, Postgres's
# generated columns).
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
    ("sources", ("debate_id", "number"), "debate_id, number"),
    # what purges leave (purge.py): spend sums, tombstones, waiting uninstalls, orgs; and the audit trail
    ("usage_days", ("id",), "id"),
    ("purged_debates", ("id",), "purged_at, id"),
    ("uninstalls", ("platform", "workspace"), "platform, workspace"),
    ("workspace_orgs", ("platform", "workspace"), "platform, workspace"),
    ("audit", ("id",), "id"),
)
TIME_COLUMNS = {"created_at", "finished_at", "started_at", "at", "updated_at", "held_since", "day", "purged_at",
                "removed_at", "purge_after"}
FLAG_COLUMNS = {"channel_private", "split", "final", "tokens_estimated"}
POSTGRES_ONLY = {"seq", "topic_tsv", "text_tsv", "recommendation_tsv"}  # generated there, never copied


class Copied(BaseModel):
    """Rows written to the target, per table."""

    tables: dict[str, int]

    def text(self) -> str:
        return ", ".join(f"{n} {table}" for table, n in self.tables.items())


async def _batch(c: Conn, table: str, order: str, offset: int) -> list[dict[str, Any]]:
    """Rows in the neutral form: times in epoch seconds, flags booleans."""
    found = await c.rows(f"select * from {table} order by {order} limit :n offset :offset",
                         {"n": BATCH, "offset": offset})
    return [{k: (c.epoch(v) if k in TIME_COLUMNS else bool(v) if k in FLAG_COLUMNS and v is not None else v)
             for k, v in row.items() if k not in POSTGRES_ONLY} for row in found]


async def _write(c: Conn, table: str, key: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    columns = list(rows[0])
    sets = ", ".join(f'"{k}" = excluded."{k}"' for k in columns if k not in key)
    keys, quoted = ", ".join(f'"{k}"' for k in key), ", ".join(f'"{k}"' for k in columns)
    await c.executemany(f"insert into {table} ({quoted})"
                        f" values ({', '.join(':' + k for k in columns)})"
                        f" on conflict ({keys}) {f'do update set {sets}' if sets else 'do nothing'}",
                        [{k: c.time(v) if k in TIME_COLUMNS else v for k, v in row.items()} for row in rows])


async def _copy(reader: DebateLog, writer: DebateLog) -> Copied:
    """Every table, in batches of BATCH rows, each read and written in one transaction through its own log's
    `Conn`: the values cross in a neutral form (`_batch`)."""
    copied: dict[str, int] = {}
    for table, key, order in TABLES:
        copied[table] = 0
        while batch := await reader._read(lambda c, t=table, o=order, n=copied[table]: _batch(c, t, o, n), []):
            await writer._write(lambda c, t=table, k=key, rows=batch: _write(c, t, k, rows))
            copied[table] += len(batch)
    await writer._write(lambda c: c.ids_written(("turns", "notices", "usage_days", "audit")))
    return Copied(tables=copied)


async def migrate_log(source: str | Path, target: str | Path) -> Copied:
    """Copy the log at `source` into `target` (each a SQLite path or a postgresql:// URL). The source must be
    on the current schema (`debate serve` once upgrades it)."""
    if str(source) == str(target):
        raise StoreError("the source and the target are the same log")
    if not is_postgres_url(source) and not await asyncio.to_thread(Path(source).exists):
        raise StoreError(f"no debate log at {source}")
    # the source exists and its schema is current; the target's schema is created or brought up to date
    async with open_log(source, readonly=True) as reader, open_log(target) as writer:
        return await _copy(reader, writer)
