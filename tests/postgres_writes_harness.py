"""What test_postgres_writes.py shares with other test modules, moved here so that no test module imports another:
`_until_waiting`."""

from __future__ import annotations

import asyncio
import time

import psycopg


def _waiting_on_locks(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("select count(*) from pg_stat_activity where datname = current_database()"
                           " and wait_event_type = 'Lock'").fetchone()
    return int(row[0]) if row else 0


async def _until_waiting(url: str, count: int) -> None:
    """Polls the server (a lock wait sends the client nothing to await)."""
    deadline = time.monotonic() + 10
    while await asyncio.to_thread(_waiting_on_locks, url) < count:
        assert time.monotonic() < deadline, "the writes did not wait for the debate's row lock"
        await asyncio.sleep(0.01)
