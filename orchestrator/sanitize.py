"""Short, safe metadata from untrusted text: secrets redacted, control characters gone, bounded length."""

from __future__ import annotations

import re

from orchestrator.redaction import make_redactor

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_redact_known_shapes = make_redactor()


def sanitize_metadata(text: str, limit: int = 200) -> str:
    text = _redact_known_shapes(_CONTROL.sub(" ", text))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
