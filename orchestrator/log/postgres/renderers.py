"""Which front renders each debate's thread, in the Postgres log: the twin of ../renderers.py."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.log.postgres.reads import Conn, to_time


async def claim_threads(conn: Conn, renderer: str, debate_ids: Sequence[str], lease_s: float, at: float) -> list[str]:
    await conn.execute(
        "update debates set renderer = %(renderer)s, renderer_until = %(until)s where id = any(%(ids)s)"
        " and (renderer is null or renderer = %(renderer)s or renderer_until is null or renderer_until < %(now)s)",
        {"renderer": renderer, "until": to_time(at + lease_s), "ids": list(debate_ids), "now": to_time(at)})
    cur = await conn.execute("select id from debates where id = any(%s) and renderer = %s",
                             [list(debate_ids), renderer])
    held = {row[0] for row in await cur.fetchall()}
    return [debate_id for debate_id in debate_ids if debate_id in held]


async def release_threads(conn: Conn, renderer: str, debate_ids: Sequence[str]) -> None:
    await conn.execute("update debates set renderer = null, renderer_until = null where id = any(%s)"
                       " and renderer = %s", [list(debate_ids), renderer])
