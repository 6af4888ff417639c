"""A verdict's cruxes: the one to three disagreements its outcome turns on, ranked, each with what evidence
would settle it.

Each judge pass names its own (`cruxes` in the answer's schema, verdict_answer.py); a pass that names none
lends its disagreements instead, with nothing said of what would settle them. The passes of a judge (or
every juror of a jury) are merged: a crux raised by more passes ranks higher, then by the best place any
pass gave it, then by the order the passes were asked; the same crux in other words is one crux when its
words match once case, spacing and punctuation are set aside. A No clear winner verdict's recommendation
says what to gather first when the passes did not agree on one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from orchestrator.debate.verdict_answer import one_text, text_items
from orchestrator.models import Crux, Verdict

MAX_CRUXES = 3
CRUX_CHARS = 300
_SETTLE_KEYS = ("settle", "settled_by", "evidence", "what_would_settle_it", "would_settle", "resolve", "resolved_by")
_TEXT_KEYS = ("disagreement", "crux", "question", "issue", "point")
_SPLIT_SETTLE = re.compile(r"\s+(?:—|--|-)?\s*(?:settled by|would be settled by|settle(?:d)? it:?)\s*:?\s*",
                           re.IGNORECASE)


def read_cruxes(value: Any, disagreements: tuple[str, ...]) -> tuple[Crux, ...]:
    """A pass's cruxes from any shape a model gives (a list of objects or of strings); its disagreements
    when it named none."""
    found: list[Crux] = []
    for item in value if isinstance(value, list) else text_items(value):
        crux = _one(item)
        if crux is not None:
            found.append(crux)
    if not found:
        found = [Crux(disagreement=d[:CRUX_CHARS]) for d in disagreements if d.strip()]
    return tuple(found[:MAX_CRUXES])


def _one(item: Any) -> Crux | None:
    if isinstance(item, dict):
        keys = {re.sub(r"[\s-]+", "_", str(k).strip().lower()): v for k, v in item.items()}
        text = next((one_text(keys[k]) for k in _TEXT_KEYS if one_text(keys.get(k))), "")
        settle = next((one_text(keys[k]) for k in _SETTLE_KEYS if one_text(keys.get(k))), "")
    else:
        parts = _SPLIT_SETTLE.split(str(item or ""), maxsplit=1)
        text, settle = parts[0], parts[1] if len(parts) > 1 else ""
    text = text.strip()
    return Crux(disagreement=text[:CRUX_CHARS], settle=settle.strip()[:CRUX_CHARS]) if text else None


def merged(passes: Iterable[tuple[Crux, ...]]) -> tuple[Crux, ...]:
    """The passes' cruxes as one ranked list of at most MAX_CRUXES."""
    seen: dict[str, tuple[int, int, int, Crux]] = {}  # key -> (passes raising it, best rank, first seen, crux)
    order = 0
    for cruxes in passes:
        for rank, crux in enumerate(cruxes):
            key = _key(crux.disagreement)
            if key in seen:
                count, best, first, kept = seen[key]
                kept = kept if kept.settle or not crux.settle else kept.model_copy(update={"settle": crux.settle})
                seen[key] = (count + 1, min(best, rank), first, kept)
            else:
                seen[key] = (1, rank, order, crux)
                order += 1
    ranked = sorted(seen.values(), key=lambda v: (-v[0], v[1], v[2]))
    return tuple(v[3] for v in ranked[:MAX_CRUXES])


def _key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def undecided_recommendation(verdicts: list[Verdict], cruxes: tuple[Crux, ...]) -> str:
    """What a No clear winner verdict recommends: the passes' recommendation when they all gave the same
    one, else to gather what would settle the cruxes first, else the first reading's."""
    recommendations = {v.recommendation.strip() for v in verdicts if v.recommendation.strip()}
    if len(recommendations) == 1:
        return recommendations.pop()
    gather = [c.settle.rstrip(".") for c in cruxes if c.settle]
    if gather:
        return "No side has won yet: gather this first — " + "; ".join(gather) + "."
    return verdicts[0].recommendation if verdicts else ""
