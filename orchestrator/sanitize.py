"""Short, safe metadata from untrusted text: secrets redacted, control characters gone, bounded length."""

from __future__ import annotations

import re
from collections.abc import Iterable

from orchestrator.redaction import make_redactor

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_redact_known_shapes = make_redactor()


def sanitize_metadata(text: str, limit: int | None = 200, secrets: Iterable[str] = ()) -> str:
    """One line: configured `secrets` and well-known key shapes redacted, at most `limit` characters."""
    redact = make_redactor(secrets) if secrets else _redact_known_shapes
    text = " ".join(redact(_CONTROL.sub(" ", text)).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text
