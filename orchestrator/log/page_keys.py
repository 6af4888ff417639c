"""The debate page's key per debate: a random token its link is made from (bots/page/keys.py).

`page_token` returns the debate's token, making one the first time (two processes racing both get the
one that landed); `renew=True` replaces it, so every link made from the old one stops working.
`stored_page_token` only reads: a page request never creates a key. Written once over both databases.
"""

from __future__ import annotations

import secrets

from orchestrator.log.dialect import Conn
from orchestrator.log.records import DebateNotFoundError
from orchestrator.models import now

TOKEN_BYTES = 24
_KEEP = "do nothing"
_RENEW = "do update set token = excluded.token, created_at = excluded.created_at"


async def page_token(c: Conn, debate_id: str, renew: bool) -> str:
    if await c.one("select 1 from debates where id = :id", {"id": debate_id}) is None:
        raise DebateNotFoundError(debate_id)
    await c.values("insert into page_keys (debate_id, token, created_at) values (:debate_id, :token, :at)"
                   f" on conflict (debate_id) {_RENEW if renew else _KEEP}",
                   {"debate_id": debate_id, "token": secrets.token_urlsafe(TOKEN_BYTES), "at": c.time(now())})
    return str(await c.one("select token from page_keys where debate_id = :id", {"id": debate_id}))


async def stored_page_token(c: Conn, debate_id: str) -> str | None:
    found = await c.one("select token from page_keys where debate_id = :id", {"id": debate_id})
    return None if found is None else str(found)
