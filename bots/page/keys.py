"""A debate page's link is a capability: `{DEBATE_PUBLIC_URL}/d/{id}/{key}`.

The key comes from a random token stored with the debate (the log's `page_keys`): with
`DEBATE_WEB_SECRET` set it is an HMAC of the debate id and that token under the secret (a copy of the
log alone makes no link), else the token itself. `debate link ID --revoke` stores a new token, so
every older link stops working. Keys are compared in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Protocol

from bots.settings import BotSettings
from orchestrator.log import DebateRecord, Scope

PAGE_PREFIX = "/d/"
KEY_CHARS = 32


class PageKeys(Protocol):
    """Where a debate's page token is kept: the core's operations (orchestrator/operations.py) or the log."""

    async def page_token(self, debate_id: str, *, renew: bool = False) -> str: ...

    async def stored_page_token(self, debate_id: str) -> str | None: ...


class LinkedDebates(PageKeys, Protocol):
    async def debate(self, id_or_prefix: str, scope: Scope | None = None, *, turns: bool = True
                     ) -> DebateRecord | None: ...


def page_key(settings: BotSettings, debate_id: str, token: str) -> str:
    if not settings.debate_web_secret:
        return token
    mac = hmac.new(settings.debate_web_secret.encode(), f"{debate_id}:{token}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")[:KEY_CHARS]


def key_matches(settings: BotSettings, debate_id: str, token: str | None, given: str) -> bool:
    expected = page_key(settings, debate_id, token or "")
    # compared even with no token stored, so a missing key costs what a wrong one does
    same = hmac.compare_digest(expected.encode(), given.encode())
    return token is not None and bool(given) and same


def page_path(debate_id: str, key: str) -> str:
    return f"{PAGE_PREFIX}{debate_id}/{key}"


def public_url(settings: BotSettings) -> str | None:
    base = (settings.debate_public_url or "").strip().rstrip("/")
    return base or None


async def page_link(store: PageKeys, settings: BotSettings, debate_id: str, *, renew: bool = False) -> str | None:
    """The debate's page link (its key made on first use; `renew`: a new key), or None without DEBATE_PUBLIC_URL."""
    base = public_url(settings)
    if base is None:
        return None
    token = await store.page_token(debate_id, renew=renew)
    return base + page_path(debate_id, page_key(settings, debate_id, token))


def parse_page_url(settings: BotSettings, url: str) -> tuple[str, str] | None:
    """(debate id, key) of a page link under DEBATE_PUBLIC_URL, else None (for Slack's unfurls)."""
    base = public_url(settings)
    if base is None or not url.startswith(base + PAGE_PREFIX):
        return None
    parts = url[len(base + PAGE_PREFIX):].split("?", 1)[0].split("#", 1)[0].strip("/").split("/")
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


async def linked_debate(store: LinkedDebates, settings: BotSettings, url: str, scope: Scope) -> DebateRecord | None:
    """The debate a page link opens, when its key is right and `scope` may see it (as recall would), else None."""
    parsed = parse_page_url(settings, url)
    if parsed is None:
        return None
    debate_id, key = parsed
    if not key_matches(settings, debate_id, await store.stored_page_token(debate_id), key):
        return None
    record = await store.debate(debate_id, scope, turns=False)
    return record if record is not None and record.id == debate_id else None
