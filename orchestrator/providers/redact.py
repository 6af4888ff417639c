"""Small helpers the provider backends share: scrubbed error text, safe hosts, token estimates."""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.safety import sanitize_metadata


def redact(text: str, secrets: Iterable[str] = (), *, limit: int | None = 200) -> str:
    """Replace known secrets and credential-shaped strings; one line of at most `limit` characters."""
    return sanitize_metadata(text, limit, secrets)


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
