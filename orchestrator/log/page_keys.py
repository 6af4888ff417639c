"""The debate page's key per debate, in the SQLite log: a random token its link is made from.

`page_token` returns the debate's token, making one the first time (two processes racing both get the
one that landed); `renew=True` replaces it, so every link made from the old one stops working.
`stored_page_token` only reads: a page request never creates a key. The Postgres twin is
postgres/page_keys.py: the same statements.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from sqlite_utils import Database

from orchestrator.log.records import DebateNotFoundError, to_iso
from orchestrator.models import now

TOKEN_BYTES = 24
INSERT = ("insert into page_keys (debate_id, token, created_at) values (:debate_id, :token, :at)"
          " on conflict (debate_id) do nothing")
RENEW = ("insert into page_keys (debate_id, token, created_at) values (:debate_id, :token, :at)"
         " on conflict (debate_id) do update set token = excluded.token, created_at = excluded.created_at")


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def page_token(debate_id: str, renew: bool) -> Callable[[Database], str]:
    args = {"debate_id": debate_id, "token": new_token(), "at": to_iso(now())}

    def fn(db: Database) -> str:
        if db.execute("select 1 from debates where id = ?", [debate_id]).fetchone() is None:
            raise DebateNotFoundError(debate_id)
        db.execute(RENEW if renew else INSERT, args)
        return str(db.execute("select token from page_keys where debate_id = ?", [debate_id]).fetchone()[0])

    return fn


def stored_page_token(debate_id: str) -> Callable[[Database], str | None]:
    def fn(db: Database) -> str | None:
        found = db.execute("select token from page_keys where debate_id = ?", [debate_id]).fetchone()
        return None if found is None else str(found[0])

    return fn
