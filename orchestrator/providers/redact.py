"""Scrub secrets out of text before it reaches a log line or an error message."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Shapes of credentials we may see in tool output even when we do not know the value itself.
_PATTERNS = re.compile(
    r"(sk-(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{6,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{6,}"
    r"|xapp-[A-Za-z0-9\-]{6,}"
    r"|AIza[0-9A-Za-z_\-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|(?i:bearer)\s+[A-Za-z0-9._\-]{8,}"
    r"|(?i:api[_-]?key)[\"']?\s*[:=]\s*[\"']?[^\s\"',;]{6,})"
)
REDACTED = "[redacted]"


def redact(text: str, secrets: Iterable[str] = (), *, limit: int | None = 200) -> str:
    """Replace known secrets and credential-shaped strings; cut to `limit` characters."""
    for secret in secrets:
        if secret and len(secret) >= 6:
            text = text.replace(secret, REDACTED)
    text = _PATTERNS.sub(REDACTED, text)
    text = " ".join(text.split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def safe_host(url: str | None) -> str:
    """`scheme://host[:port]` of a URL: no user info, path or query that could carry a token."""
    if not url:
        return "?"
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme or 'http'}://{host}{port}"


def estimate_tokens(text: str) -> int:
    """About four characters a token: used when a server reports no usage, so totals are never 0."""
    return max(1, -(-len(text) // 4)) if text else 0


def seconds(value: float) -> str:
    return f"{value:g}"
