"""Scrubbing secrets out of text before it is stored or shown, and short safe metadata from untrusted text.

Model output can echo the environment (a CLI tool reads the user's repo; a prompt-injected model
can print a key it saw). Everything the store writes passes through one redactor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6  # shorter configured values would redact ordinary words

# Well-known credential shapes, redacted even when they are not one of our configured secrets.
KEY_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{10,}"),  # Anthropic
    re.compile(r"sk-(?:proj-|svcacct-|or-v1-)?[A-Za-z0-9_\-]{16,}"),  # OpenAI, OpenRouter
    re.compile(r"xox[abposr]-[A-Za-z0-9\-]{10,}"),  # Slack bot / user / legacy tokens
    re.compile(r"xapp-[A-Za-z0-9\-]{10,}"),  # Slack app-level token
    re.compile(r"AIza[0-9A-Za-z_\-]{30,}"),  # Google / Gemini
    re.compile(r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}"),  # Discord bot
    re.compile(r"(?i)\bBearer\s+[A-Za-z0-9._\-]{20,}"),  # an Authorization header value
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens (CLI tools run beside repositories)
    re.compile(r"(?i)api[_-]?key[\"']?\s*[:=]\s*[\"']?[^\s\"',;]{6,}"),  # api_key=… in tool output
)


def make_redactor(secrets: Iterable[str] = ()) -> Callable[[str], str]:
    """A function replacing each configured secret and each well-known key shape with [redacted]."""
    literal = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
    patterns = list(KEY_PATTERNS)
    if literal:
        patterns.insert(0, re.compile("|".join(re.escape(s) for s in literal)))

    def redact(text: str) -> str:
        if not text:
            return text
        for pattern in patterns:
            text = pattern.sub(REDACTED, text)
        return text

    return redact


def no_redaction(text: str) -> str:
    return text


def redact_value(value: object, redact: Callable[[str], str]) -> object:
    """Apply `redact` to every string inside a JSON-like value (a model's dump)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(v, redact) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v, redact) for k, v in value.items()}
    return value


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_redact_known_shapes = make_redactor()


def sanitize_metadata(text: str, limit: int | None = 200, secrets: Iterable[str] = ()) -> str:
    """One line: configured `secrets` and well-known key shapes redacted, at most `limit` characters."""
    redact = make_redactor(secrets) if secrets else _redact_known_shapes
    text = " ".join(redact(_CONTROL.sub(" ", text)).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text
