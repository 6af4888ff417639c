"""`open_log`: the one place that picks the log's implementation, from what DEBATE_DB or
DEBATE_DATABASE_URL names: a SQLite file's path, or a `postgresql://` URL."""

from __future__ import annotations

from pathlib import Path

from orchestrator.log.protocol import DebateLog
from orchestrator.log.sqlite import Store

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str | Path) -> bool:
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def open_log(target: str | Path, *, runner: str | None = None, readonly: bool = False) -> DebateLog:
    """The log at `target`, a SQLite file's path or a `postgresql://` URL (not started yet:
    `await log.start()` or `async with`)."""
    if is_postgres_url(target):
        from orchestrator.log.postgres.store import PostgresLog  # psycopg loads only for a Postgres log

        return PostgresLog(str(target), runner=runner, readonly=readonly)
    return Store(target, runner=runner, readonly=readonly)
