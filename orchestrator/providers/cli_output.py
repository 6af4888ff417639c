"""What each coding agent's CLI prints, read into text and token counts (see cli_tools for how each runs).

The message of a BadOutput is safe to show: it never quotes the tool's output.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ParsedOutput:
    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


class BadOutput(Exception):
    """The tool's stdout is not the shape we expected; the message is safe (no output quoted)."""


def _json_document(out: str) -> Any:
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        pass
    # Some tools print a warning line before the JSON; take the last line that parses.
    for line in reversed(out.splitlines()):
        line = line.strip()
        if line.startswith(("{", "[")):
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(line)
    raise BadOutput("output is not JSON")


def _json_lines(out: str) -> list[dict[str, Any]]:
    events = []
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(line)
            if isinstance(value, dict):
                events.append(value)
    if not events:
        raise BadOutput("output has no JSON lines")
    return events


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_claude(out: str) -> ParsedOutput:
    doc = _json_document(out)
    if isinstance(doc, list):  # --verbose prints the whole event list; the result is the last "result"
        doc = next((e for e in reversed(doc) if isinstance(e, dict) and e.get("type") == "result"), None)
    if not isinstance(doc, dict) or not isinstance(doc.get("result"), str):
        raise BadOutput("no \"result\" text in the JSON")
    if doc.get("is_error"):
        raise BadOutput("the tool reported an error result")
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    inputs = [
        _int(usage.get(k)) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    ]
    input_tokens = sum(v for v in inputs if v) or None
    return ParsedOutput(doc["result"], input_tokens, _int(usage.get("output_tokens")))


def parse_gemini(out: str) -> ParsedOutput:
    doc = _json_document(out)
    if not isinstance(doc, dict):
        raise BadOutput("the JSON is not an object")
    if doc.get("error") and not doc.get("response"):
        raise BadOutput("the tool reported an error")
    if not isinstance(doc.get("response"), str):
        raise BadOutput("no \"response\" text in the JSON")
    prompt = candidates = 0
    models = (doc.get("stats") or {}).get("models") or {}
    if isinstance(models, dict):
        for stats in models.values():
            tokens = stats.get("tokens") if isinstance(stats, dict) else None
            if isinstance(tokens, dict):
                prompt += _int(tokens.get("prompt")) or 0
                candidates += _int(tokens.get("candidates")) or 0
    return ParsedOutput(doc["response"], prompt or None, candidates or None)


def parse_codex(out: str) -> ParsedOutput:
    text: str | None = None
    input_tokens = output_tokens = None
    for event in _json_lines(out):
        kind = event.get("type")
        item = event.get("item")
        if kind == "item.completed" and isinstance(item, dict) and item.get("type") == "agent_message":
            if isinstance(item.get("text"), str):
                text = item["text"]
        elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
            input_tokens = _int(event["usage"].get("input_tokens"))
            output_tokens = _int(event["usage"].get("output_tokens"))
        elif kind in ("turn.failed", "error"):
            raise BadOutput("the tool reported a failed turn")
    if text is None:
        raise BadOutput("no agent_message in the JSON lines")
    return ParsedOutput(text, input_tokens, output_tokens)


def parse_opencode(out: str) -> ParsedOutput:
    parts: list[str] = []
    input_tokens = output_tokens = 0
    for event in _json_lines(out):
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        if event.get("type") == "text" and isinstance(part.get("text"), str):
            parts.append(part["text"])
        tokens = part.get("tokens")
        if isinstance(tokens, dict):
            input_tokens += _int(tokens.get("input")) or 0
            output_tokens += _int(tokens.get("output")) or 0
        if event.get("type") == "error":
            raise BadOutput("the tool reported an error")
    if not parts:
        raise BadOutput("no text parts in the JSON lines")
    return ParsedOutput("".join(parts), input_tokens or None, output_tokens or None)


def parse_copilot(out: str) -> ParsedOutput:
    return ParsedOutput(out.strip())
