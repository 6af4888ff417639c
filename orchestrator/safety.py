"""The one redactor and sanitizer: secrets out of text before anyone stores or sees it, control characters out of
untrusted text, and short safe metadata from errors.

Model output can echo the environment (a CLI tool reads the user's repo; a prompt-injected model can print a key it
saw), and a topic can carry bidi overrides that make a message read backwards. The engine applies one `Redactor` to
every event where it is emitted (`DebateRun.emit`), before any sink, the log included; nothing downstream redacts
again. User text is scrubbed earlier, on the way in: the models at the boundary (DebateSpec, Interjection,
ChannelDefaults) pass it through `scrub_user_text`, so a key pasted into a topic or a note is never posted, stored or
sent to a model.

Streamed text goes through `Redactor.stream()`, which holds back the tail that could still begin a secret (an
unfinished word, `Bearer ` or `api_key = ` awaiting its value, a configured secret's start) until it cannot, so a key
split across deltas never leaves in pieces. Key shapes carry word boundaries: `risk-adjusted` is not a key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6  # shorter configured values would redact ordinary words
MAX_HELD_CHARS = 4096  # a stream holds at most this much of one unbroken word...
KEEP_HELD_CHARS = 1024  # ...then releases all but this tail (no real secret is this long)

_B = r"(?<![A-Za-z0-9_])"  # a left word boundary that also holds before a '-' or '.'

# Well-known credential shapes, redacted even when they are not one of our configured secrets.
KEY_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(_B + r"sk-ant-[A-Za-z0-9_\-]{10,}"),  # Anthropic
    re.compile(_B + r"sk-(?:proj-|svcacct-|or-v1-)?[A-Za-z0-9_\-]{16,}"),  # OpenAI, OpenRouter
    re.compile(_B + r"xox[abposr]-[A-Za-z0-9\-]{10,}"),  # Slack bot / user / legacy tokens
    re.compile(_B + r"xapp-[A-Za-z0-9\-]{10,}"),  # Slack app-level token
    re.compile(_B + r"AIza[0-9A-Za-z_\-]{30,}"),  # Google / Gemini
    re.compile(_B + r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}"),  # Discord bot
    re.compile(r"(?i)" + _B + r"Bearer\s+[A-Za-z0-9._\-]{20,}"),  # an Authorization header value
    re.compile(_B + r"gh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens (CLI tools run beside repositories)
    re.compile(r"(?i)" + _B + r"api[_-]?key[\"']?\s*[:=]\s*[\"']?[^\s\"',;]{6,}"),  # api_key=… in tool output
)

# For each shape above, in order, a search for what it cannot match without (the literal it starts with, or for
# Discord's the dotted middle), with the same flags: prose holds none of them, and a search for a literal is far
# cheaper than the shape's own scan, which tests its look-behind at every character.
_NEEDS: tuple[re.Pattern[str], ...] = (
    re.compile("sk-ant-"),
    re.compile("sk-"),
    re.compile("xox"),
    re.compile("xapp-"),
    re.compile("AIza"),
    re.compile(r"\.[A-Za-z0-9_\-]{6}\."),
    re.compile(r"(?i)Bearer"),
    re.compile(r"gh[pousr]_"),
    re.compile(r"(?i)api[_-]?key"),
)

# The unfinished beginnings of the shapes above that span whitespace, when they end the text so far.
_OPEN_HEADS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?i)" + _B + r"Bearer\s+\S*$"),
    re.compile(r"(?i)" + _B + r"api[_-]?key[\"']?\s*(?:[:=]\s*[\"']?[^\s\"',;]*)?$"),
)
_LAST_WORD = re.compile(r"\S+$")

# NUL and the other C0/C1 controls except tab and newline (ANSI escapes, carriage returns that
# overwrite a terminal line), and the bidi embeddings, overrides, isolates and marks.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: str) -> str:
    """`text` without NUL, terminal control characters or bidi controls; newlines and tabs stay."""
    return _CONTROLS.sub("", text)


class Redactor:
    """Strips control characters and replaces each configured secret (`secrets`: the API keys and
    tokens in Settings) and each well-known key shape with [redacted]. Call it on whole text;
    `stream()` for text that arrives in pieces."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._literals = sorted({s.strip() for s in secrets if s and len(s.strip()) >= MIN_SECRET_CHARS},
                                key=len, reverse=True)
        self._patterns = list(zip(KEY_PATTERNS, _NEEDS, strict=True))
        if self._literals:
            literals = re.compile("|".join(re.escape(s) for s in self._literals))
            self._patterns.insert(0, (literals, literals))

    def __call__(self, text: str) -> str:
        if not text:
            return text
        text = strip_controls(text)
        if len(text) < MIN_SECRET_CHARS:  # shorter than any configured secret or key shape (an event's keys)
            return text
        for pattern, needs in self._patterns:
            if needs.search(text):
                text = pattern.sub(REDACTED, text)
        return text

    def value(self, value: object) -> object:
        """Every string inside a JSON-like value (a model's dump) scrubbed."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        return value

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self)

    def _after(self, before: str, chunk: str) -> str:
        """`chunk` redacted as it reads after the character `before` (the key shapes look one back)."""
        if before:
            shown = self(before + chunk)
            if shown.startswith(before):
                return shown[len(before):]
        return self(chunk)

    def _safe_cut(self, before: str, pending: str) -> int:
        """How much of `pending` can be released: nothing that could still grow into a secret, and no
        cut through a secret that is already whole."""
        text = before + pending
        offset = len(before)
        last_word = _LAST_WORD.search(pending)
        cut = last_word.start() if last_word else len(pending)
        for head in _OPEN_HEADS:
            match = head.search(text, offset)
            if match:
                cut = min(cut, match.start() - offset)
        for literal in self._literals:
            for start in range(max(0, len(pending) - len(literal) + 1), len(pending)):
                if pending[start] == literal[0] and literal.startswith(pending[start:]):
                    cut = min(cut, start)
                    break
        if len(pending) - cut > MAX_HELD_CHARS:  # one enormous word: let most of it go
            cut = len(pending) - KEEP_HELD_CHARS
        moved = True
        while moved and cut > 0:
            moved = False
            for pattern, needs in self._patterns:
                if needs.search(text, offset) is None:
                    continue
                for match in pattern.finditer(text, offset):
                    start, end = match.start() - offset, match.end() - offset
                    if start < cut < end:
                        cut, moved = max(start, 0), True
        return max(cut, 0)


class StreamRedactor:
    """One streamed text (a turn): `feed` each delta and show what it returns, `finish` at the end."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._pending = ""
        self._before = ""  # the last character released, for the key shapes' left boundary

    def feed(self, delta: str) -> str:
        self._pending += strip_controls(delta)
        return self._release(self._redactor._safe_cut(self._before, self._pending))

    def finish(self) -> str:
        """Everything still held, redacted; the stream is empty afterwards."""
        return self._release(len(self._pending))

    def _release(self, cut: int) -> str:
        if cut <= 0:
            return ""
        chunk, self._pending = self._pending[:cut], self._pending[cut:]
        shown = self._redactor._after(self._before, chunk)
        self._before = chunk[-1]
        return shown


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_redact_known_shapes = Redactor()
_redact_user_text = _redact_known_shapes  # the process's configured secrets join it in `use_configured_secrets`


def use_configured_secrets(secrets: Iterable[str]) -> None:
    """From now on in this process, user text (`scrub_user_text`) loses these secrets too, not only the key
    shapes. Called once settings are loaded (`load_settings`), before any user text is read."""
    global _redact_user_text
    _redact_user_text = Redactor(secrets)


def scrub_user_text(text: str) -> str:
    """What a person typed (a topic, a note, a setting), as it may be stored, shown and put in a prompt:
    control characters, well-known key shapes and the configured secrets out. The models that carry user
    text (orchestrator/models.py) apply it as they are built, so every surface is covered by construction."""
    return _redact_user_text(text)


def sanitize_metadata(text: str, limit: int | None = 200, secrets: Iterable[str] = ()) -> str:
    """One line: configured `secrets` and well-known key shapes redacted, at most `limit` characters."""
    redact: Callable[[str], str] = Redactor(secrets) if secrets else _redact_known_shapes
    text = " ".join(redact(_CONTROL.sub(" ", text)).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text
