"""The debate page's key per debate, in the Postgres log: the twin of ../page_keys.py (same statements,
in the transaction the caller opened)."""

from __future__ import annotations

from datetime import UTC, datetime

from orchestrator.log.page_keys import INSERT, RENEW, new_token
from orchestrator.log.postgres.reads import Conn, values
from orchestrator.log.records import DebateNotFoundError
from orchestrator.models import now


def _pg(sql: str) -> str:
    return sql.replace(":debate_id", "%(debate_id)s").replace(":token", "%(token)s").replace(":at", "%(at)s")


async def page_token(conn: Conn, debate_id: str, renew: bool) -> str:
    if not await values(conn, "select 1 from debates where id = %s", [debate_id]):
        raise DebateNotFoundError(debate_id)
    args = {"debate_id": debate_id, "token": new_token(), "at": datetime.fromtimestamp(now(), UTC)}
    await conn.execute(_pg(RENEW if renew else INSERT), args)
    (token,) = await values(conn, "select token from page_keys where debate_id = %s", [debate_id])
    return str(token)


async def stored_page_token(conn: Conn, debate_id: str) -> str | None:
    found = await values(conn, "select token from page_keys where debate_id = %s", [debate_id])
    return str(found[0]) if found else None
