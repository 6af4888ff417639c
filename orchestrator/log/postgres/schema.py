"""The Postgres runner of the log's migrations (../schema.py): applied in order and recorded in
`debate_log_migrations`, all pending ones in one transaction under an advisory lock, so two processes
starting at once apply each once.

A log written before the two lists became one recorded the Postgres list's own names and numbers;
`FORMER` says which of those applied each migration of the one list, and the first migration run on
such a log records the one list's names instead.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from orchestrator.log.schema import MIGRATIONS, TEXT_SEARCH_CONFIG, Step, migration_names

__all__ = ["MIGRATIONS_TABLE", "TEXT_SEARCH_CONFIG", "applied", "migrate", "migration_names"]

MIGRATIONS_TABLE = "debate_log_migrations"
# one lock id for "migrating the debate log" (any fixed bigint; this one spells "debatelg" in hex-ish)
MIGRATION_LOCK = 0x6465_6261_7465_6C67

FORMER: dict[str, tuple[str, ...]] = {
    "m001_core_tables": ("m002_core_tables",),
    "m002_indexes": ("m003_indexes",),
    "m003_full_text_search": ("m001_text_search", "m004_full_text_search"),
    "m004_request_keys": ("m002_core_tables",),
    "m005_tenancy_and_runner": ("m002_core_tables", "m003_indexes"),
    "m006_admission": ("m003_indexes",),
    "m007_message_final": ("m002_core_tables", "m003_indexes"),
    "m008_team_in_the_loop": ("m005_team_in_the_loop",),
    "m009_thread_renderer": ("m006_thread_renderer",),
    "m010_running_slots": ("m008_running_slots",),
    "m011_turn_vectors_inline": ("m007_turn_vectors_inline",),
}


async def applied(conn: AsyncConnection[Any]) -> list[str]:
    """The migrations recorded in this database, in the order they ran ([] before the first), by the
    one list's names."""
    cur = await conn.execute("select to_regclass(%s) is not null", [MIGRATIONS_TABLE])
    row = await cur.fetchone()
    if not row or not row[0]:
        return []
    cur = await conn.execute(f"select name from {MIGRATIONS_TABLE} order by id")
    done = [r[0] for r in await cur.fetchall()]
    if set(done) & set(migration_names()):
        return done
    return [name for name in migration_names() if name in FORMER and set(FORMER[name]) <= set(done)]


async def migrate(conn: AsyncConnection[Any], *, stop_before: str | None = None) -> list[str]:
    """Apply what is pending (up to `stop_before`, for tests of old schemas); returns what ran."""
    ran: list[str] = []
    async with conn.transaction():
        await conn.execute("select pg_advisory_xact_lock(%s)", [MIGRATION_LOCK])
        await conn.execute(
            f"create table if not exists {MIGRATIONS_TABLE} (id serial primary key, name text unique not null,"
            " applied_at timestamptz not null default now())"
        )
        done = await applied(conn)
        cur = await conn.execute(f"select name from {MIGRATIONS_TABLE} order by id")
        if [r[0] for r in await cur.fetchall()] != done:  # a log from before the one list: renumbered once
            await conn.execute(f"delete from {MIGRATIONS_TABLE}")
            for name in done:
                await conn.execute(f"insert into {MIGRATIONS_TABLE} (name) values (%s)", [name])
        for name, fn in MIGRATIONS:
            if name == stop_before:
                break
            if name in done:
                continue
            step = Step("postgres")
            fn(step)
            for script in step.scripts:
                await conn.execute(script)  # several statements: psycopg sends them as one simple query
            await conn.execute(f"insert into {MIGRATIONS_TABLE} (name) values (%s)", [name])
            ran.append(name)
    return ran
