"""A judge's answer: the JSON shape asked for, and the reader that takes the shapes models really give.

Providers with a structured-output mode get `verdict_schema` (OpenAI, Gemini, vLLM, Ollama and local
llama.cpp as strict json_schema, Anthropic as a forced tool's input schema), so the shape, the key order
(evidence before the winner) and a valid winner letter come back in one call. Every other backend
(OpenRouter, CLI tools, a host that refuses the schema) answers free-form, and `read_answer` accepts what
real models write: the JSON
in a fence, bare or wrapped in prose; a winner before its evidence; evidence as one string; a trailing
comma, comments or curly quotes; single-quoted Python-style dicts; capitalised or spaced keys; the
whole answer nested under "verdict" (or any other key); or no JSON at all but `Winner:` and
`Recommendation:` lines. An answer that carries a winner and a recommendation is a verdict.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from orchestrator.providers.base import AnswerSchema

_FENCED = re.compile(r"```[A-Za-z]*\s*\n(.*?)\n?```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_LINE_COMMENT = re.compile(r'^(\s*)//.*$|(?<=[,{\[])\s*//[^\n"]*$', re.MULTILINE)
_CURLY = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})
_LINE = re.compile(r"^[\s*#>_-]*(winner|recommendation|reasoning)[\s*_]*[:=][\s*_]*(.+)$",
                   re.IGNORECASE | re.MULTILINE)
_ALIASES = {"decisive_evidence": "evidence", "key_evidence": "evidence", "rationale": "reasoning",
            "reason": "reasoning", "reasons": "reasoning", "recommended_action": "recommendation",
            "recommendations": "recommendation", "winning_debater": "winner", "winner_label": "winner"}


def verdict_schema(labels: list[str]) -> AnswerSchema:
    """The strict schema of one judge pass whose debaters are shown as `labels` (A, B, …)."""
    text = {"type": "string"}
    texts = {"type": "array", "items": text}
    rating = {"type": "string", "enum": ["high", "medium", "low"]}
    score = _strict({"seat": {"type": "string", "enum": labels}, "stance": text, "strongest_point": text,
                     "fatal_weakness": text, "score": {"type": "number"}})
    schema = _strict({
        "evidence": texts,
        "winner": {"type": "string", "enum": labels},
        "reasoning": text,
        "ratings": _strict({"genuine_disagreement": rating, "evidence_quality": rating, "challenge_depth": rating}),
        "agreements": texts,
        "disagreements": texts,
        "unresolved": texts,
        "cruxes": {"type": "array", "items": _strict({"disagreement": text, "settle": text})},
        "recommendation": text,
        "scores": {"type": "array", "items": score},
        "changed": {"type": ["boolean", "null"]},
        "change_note": text,
    })
    return AnswerSchema(name="verdict", description="The judge's verdict on the debate, evidence first.",
                        json_schema=schema, non_empty=("reasoning", "recommendation"))


def _strict(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def read_answer(text: str) -> dict[str, Any] | None:
    """The judge's answer as a dict with normalised keys (`winner`, `evidence`, …), or None when the text
    holds no object with a winner (nor `Winner:` lines)."""
    for candidate in _candidates(text):
        value = _loads(candidate)
        found = _with_winner(value) if value is not None else None
        if found is not None:
            return found
    lines = {m.group(1).lower(): m.group(2).strip().strip("*").strip() for m in _LINE.finditer(text)}
    return lines if "winner" in lines else None


def _candidates(text: str) -> list[str]:
    fenced = [m.group(1) for m in _FENCED.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    braces = [text[start:end + 1]] if start != -1 and end > start else []
    return [*reversed(fenced), *braces]  # a last fenced block is the answer more often than a first example


def _loads(candidate: str) -> Any:
    """JSON, else the same repaired (curly quotes, comments, trailing commas), else a Python literal."""
    attempts = (candidate, _repaired(candidate))
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except json.JSONDecodeError:
            continue
    try:
        return ast.literal_eval(_repaired(candidate))
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _repaired(candidate: str) -> str:
    fixed = candidate.translate(_CURLY)
    fixed = _LINE_COMMENT.sub(lambda m: m.group(1) or "", fixed)
    return _TRAILING_COMMA.sub(r"\1", fixed)


def _normal(data: dict[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = re.sub(r"[\s-]+", "_", str(key).strip().lower())
        out.setdefault(_ALIASES.get(name, name), value)
    return out


def _with_winner(value: Any, depth: int = 0) -> dict[str, Any] | None:
    """The first dict (breadth first) that names a winner; keys of the dicts around it fill in what it
    lacks (evidence beside a nested verdict)."""
    if not isinstance(value, dict) or depth > 3:
        return None
    data = _normal(value)
    if "winner" in data:
        return data
    for inner in data.values():
        found = _with_winner(inner, depth + 1)
        if found is not None:
            return {**{k: v for k, v in data.items() if not isinstance(v, dict)}, **found}
    return None


def winner_letter(value: Any, labels: dict[str, str]) -> str | None:
    """The debater letter a winner value names: "A", "a", "Debater A", "A (the proposer)",
    {"label": "A"}; None when it names none of `labels` (a tie, "both")."""
    if isinstance(value, dict):
        value = next((v for k, v in _normal(value).items() if k in ("label", "seat", "debater", "letter", "winner")),
                     "")
    word = str(value or "").strip().strip("\"'*").upper()
    word = re.sub(r"^(THE\s+)?(DEBATER|SEAT|SIDE)\s*[_:-]?\s*", "", word)
    match = re.match(r"([A-Z])(?![A-Z])", word)
    return match.group(1) if match and match.group(1) in labels else None


def text_items(value: Any) -> tuple[str, ...]:
    """A list field as strings: items of a list (dict items joined), or one string split at its bullets."""
    if isinstance(value, str):
        lines = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip() for line in value.splitlines()]
        return tuple(line for line in lines if line)
    if not isinstance(value, list):
        return ()
    out = []
    for item in value:
        if isinstance(item, dict):
            out.append(" — ".join(str(v) for v in item.values() if v))
        elif item:
            out.append(str(item))
    return tuple(out)


def one_text(value: Any) -> str:
    """A text field: a string, or a list of strings joined."""
    if isinstance(value, list):
        return " ".join(str(v).strip() for v in value if v)
    return str(value or "").strip()
