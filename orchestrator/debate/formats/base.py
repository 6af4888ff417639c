"""What every format returns to the engine, and how turns are shown to debaters and the judge."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from orchestrator.debate.quoting import quote_turn
from orchestrator.debate.run import DebateRun
from orchestrator.evidence.marks import check_marks
from orchestrator.models import EvidenceCheck, Turn, TurnStatus, Verdict


@dataclass
class FormatResult:
    rounds_completed: int
    abort: str | None = None  # the debate fails with this message and no verdict
    verdict: Verdict | None = None  # decided by the format itself (e.g. an uncontested position)
    judge_context: str = ""  # extra facts for the judge, e.g. the consensus status or the stances
    consensus: str | None = None  # yes / partial / no, for the consensus format
    descriptions: dict[str, str] | None = None  # seat label → what the judge shows beside it (a stance)
    rounds_planned: int | None = None  # the format's own plan when it is not spec.rounds (consensus, stances)


class DebateFormat(Protocol):
    name: str

    async def run(self, run: DebateRun) -> FormatResult: ...


_DEBATER_REF = re.compile(r"\b(Debater) ([A-D])\b")


def relabel_text(text: str, relabel: dict[str, str]) -> str:
    """Rename 'Debater X' references in one pass, so A→B and B→A do not undo each other."""
    if all(k == v for k, v in relabel.items()):
        return text
    return _DEBATER_REF.sub(lambda m: f"{m.group(1)} {relabel.get(m.group(2), m.group(2))}", text)


def render_turns(turns: list[Turn], *, relabel: dict[str, str] | None = None,
                 checks: Sequence[EvidenceCheck] = ()) -> str:
    """Turns quoted under anonymous labels (orchestrator/debate/quoting.py): no model or vendor names
    ever appear here, and no text inside a turn can pose as another turn. With `relabel`, the labels
    and every 'Debater X' inside the text use the new letters. With `checks` (a judge's transcript),
    each citation a check covers is followed by our mark of its status (orchestrator/evidence/marks.py)."""
    relabel = relabel or {}
    quoted = []
    for turn in turns:
        text = relabel_text(turn.text, relabel) if relabel else turn.text
        own = [c for c in checks if c.seat == turn.seat and c.round == turn.round]
        quoted.append(quote_turn(turn, label=relabel.get(turn.seat, turn.seat), text=text,
                                 marks=check_marks(text, own) if own else ()))
    return "\n\n".join(quoted)


def combine_attempts(attempts: list[Turn], *, status: TurnStatus = "ok", text: str = "",
                     error: str | None = None) -> Turn:
    """One logged turn for a call and its retries (an unreadable JSON answer asked again): their tokens
    and durations added up, the text as shown."""
    return attempts[0].model_copy(
        update={
            "text": text,
            "status": status,
            "error": error,
            "duration_ms": sum(t.duration_ms for t in attempts),
            "input_tokens": sum(t.input_tokens for t in attempts),
            "output_tokens": sum(t.output_tokens for t in attempts),
        }
    )
