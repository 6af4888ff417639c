"""The stances format's JSON: the topic's split into stances, and each debater's turn envelope.

Pure parsing and rendering, kept apart from the round plan in stances.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.debate.jsonparse import JSONExtractError, extract_json_object
from orchestrator.models import Seat, Turn
from orchestrator.providers.base import AnswerSchema
from orchestrator.safety import sanitize_metadata

MIN_STANCES, MAX_STANCES = 2, 4
_TRUE = {"true", "yes", "1"}


class EnvelopeError(ValueError):
    """A reply that is not a usable JSON answer; `code` is the only part that may be logged."""

    def __init__(self, code: str, problem: str) -> None:
        super().__init__(problem)
        self.code = code
        self.problem = problem


@dataclass(frozen=True)
class Envelope:
    stance: str
    arguments: tuple[str, ...]
    rebuttals: tuple[str, ...]
    no_new_points: bool


@dataclass(frozen=True)
class Split:
    debatable: bool
    stances: tuple[str, ...]
    reason: str = ""


@dataclass(frozen=True)
class EnvelopeTurn:
    """One debater's turn in a round: the logged Turn, and the envelope when it was readable."""

    seat: Seat
    turn: Turn
    envelope: Envelope | None

    @property
    def readable(self) -> bool:
        return self.envelope is not None


def _flag(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in _TRUE)


def _rebuttal_text(item: dict) -> str:
    target = str(item.get("target") or item.get("debater") or "").strip()
    point = str(item.get("point") or item.get("rebuttal") or item.get("text") or "").strip()
    if not point:
        point = " — ".join(str(v).strip() for k, v in item.items() if k not in ("target", "debater") and v)
    letter = re.fullmatch(r"(?:debater\s+)?([A-Da-d])", target)
    if letter:
        target = f"Debater {letter.group(1).upper()}"
    return f"{target}: {point}" if target and point else point


def _items(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    out = []
    for item in value:
        text = _rebuttal_text(item) if isinstance(item, dict) else str(item).strip() if item is not None else ""
        if text:
            out.append(" ".join(text.split()))
    return tuple(out)


def parse_envelope(text: str) -> Envelope:
    """The debater's JSON envelope, from a ```json block or the outermost braces."""
    try:
        data = extract_json_object(text)
    except JSONExtractError as exc:
        raise EnvelopeError(exc.code, "it did not contain a JSON object") from None
    if "arguments" not in data and "rebuttals" not in data:
        raise EnvelopeError("missing_keys", 'the keys "arguments" and "rebuttals" were missing')
    envelope = Envelope(
        stance=" ".join(str(data.get("stance") or "").split()),
        arguments=_items(data.get("arguments")),
        rebuttals=_items(data.get("rebuttals")),
        no_new_points=_flag(data.get("no_new_points")),
    )
    if not (envelope.arguments or envelope.rebuttals or envelope.no_new_points):
        raise EnvelopeError("empty_envelope", "it had no arguments and no rebuttals")
    return envelope


def render_envelope(envelope: Envelope) -> str:
    """The envelope as readable markdown: what users see and the judge reads."""
    parts = []
    if envelope.stance:
        parts.append(f"**Stance:** {envelope.stance}")
    if envelope.arguments:
        parts.append("**Arguments**\n" + "\n".join(f"{i}. {a}" for i, a in enumerate(envelope.arguments, 1)))
    if envelope.rebuttals:
        parts.append("**Rebuttals**\n" + "\n".join(f"- {r}" for r in envelope.rebuttals))
    if envelope.no_new_points:
        parts.append("_No new points: this debater considers its case complete._")
    return "\n\n".join(parts)


def split_schema() -> AnswerSchema:
    """The split's shape for a provider's structured-output mode (a grammar makes a small model's split readable)."""
    return AnswerSchema(name="stances", description="The topic's distinct stances, or why it is not debatable.",
                        json_schema={"type": "object", "additionalProperties": False,
                                     "required": ["debatable", "stances", "reason"],
                                     "properties": {"debatable": {"type": "boolean"},
                                                    "stances": {"type": "array", "items": {"type": "string"},
                                                                "minItems": MIN_STANCES, "maxItems": MAX_STANCES},
                                                    "reason": {"type": "string"}}})


def parse_split(text: str) -> Split:
    """The stance split: 2–4 distinct claims, or not debatable (fewer than two, or the model says so)."""
    try:
        data = extract_json_object(text)
    except JSONExtractError as exc:
        raise EnvelopeError(exc.code, "it did not contain a JSON object") from None
    raw = data.get("stances")
    if raw is None and "debatable" not in data:
        raise EnvelopeError("missing_keys", 'the keys "debatable" and "stances" were missing')
    stances: list[str] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict):
            item = item.get("claim") or item.get("stance") or ""
        claim = " ".join(str(item).split())
        if claim and claim.lower() not in {s.lower() for s in stances}:
            stances.append(claim)
    reason = " ".join(str(data.get("reason") or "").split())
    debatable = data.get("debatable", True) is not False and str(data.get("debatable")).lower() != "false"
    if not debatable or len(stances) < MIN_STANCES:
        return Split(False, (), reason)
    return Split(True, tuple(stances[:MAX_STANCES]), reason)


def converged(results: list[EnvelopeTurn]) -> bool:
    """Every debater gave a readable turn saying it has no new points (an empty turn never converges)."""
    return bool(results) and all(r.envelope is not None and r.envelope.no_new_points for r in results)


def not_debatable_message(reason: str) -> str:
    why = f" {sanitize_metadata(reason, 300).rstrip('.')}." if reason else ""
    return (
        f"This is not a debatable topic: there are no two meaningful, opposing stances to argue.{why} "
        "No debate was run. Ask it as a plain question instead, or rephrase it as a choice between positions "
        '(for example "Should we … or …?").'
    )
