"""Pull one JSON object out of model text: a ```json block first, else the outermost braces."""

from __future__ import annotations

import json
import re

from orchestrator.safety import sanitize_metadata

_FENCED = re.compile(r"```(?:json|JSON)?\s*\n(.*?)\n?```", re.DOTALL)


class JSONExtractError(ValueError):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code  # no_object, invalid_json, not_an_object


def extract_json_object(text: str) -> dict:
    candidates = [m.group(1) for m in _FENCED.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    if not candidates:
        raise JSONExtractError("no_object")
    error = "invalid_json"
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
        error = "not_an_object"
    raise JSONExtractError(error)


def parse_error_metadata(kind: str, code: str) -> str:
    """The only trace a parse failure leaves: `PARSE_ERROR:<type>:<code>`, never the raw output."""
    return sanitize_metadata(f"PARSE_ERROR:{kind}:{code}")
