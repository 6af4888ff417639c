"""How far a verdict may be trusted, computed by stated rules and never taken from a judge's words.

Three things count: whether a judge's two order-swapped passes agree (and, when they split, what a
tie-break judge of a third family did), a jury's margin, and how much of each side's decisive evidence
was verified. Every rule below is one line of README's "How sure a verdict is"; the first that applies
gives the level and its sentence travels with the verdict (`Verdict.confidence_rule`), so every surface
shows the rule that produced it. `none` is "No clear winner": the verdict names no winner, still gives a
recommendation, and names its cruxes.

Evidence checks plug in through `EvidenceTally` (see `evidence_tally`): the citations the debaters made,
checked after each turn (orchestrator/evidence/); a debate without citations is rated with
`NO_EVIDENCE_CHECKS`, and the evidence rules do not apply to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from orchestrator.models import Confidence, EvidenceCheck

TiebreakOutcome = Literal["none", "sided", "neither", "failed"]
LEVELS: tuple[Confidence, ...] = ("high", "medium", "low", "none")

# the rules, in the order they are tried; README quotes these sentences
PASSES_AGREE = "both judge passes (debaters in swapped order) agreed"
TIEBREAK_SIDED = "the judge's passes split and a tie-break judge of a third family sided with one of them"
TIEBREAK_NEITHER = "the judge's passes split and the tie-break judge chose neither pass's winner"
ONE_PASS = "only one judge pass was usable, so it could not be cross-checked"
SPLIT_NO_TIEBREAK = ("the judge's two passes disagreed and no tie-break judge decided "
                     "(none is configured, or it gave no usable answer)")
JURY_UNANIMOUS = "every juror who voted picked the winner, and no juror was undecided"
JURY_MAJORITY = "a majority of the jury's votes, with dissent or an undecided juror"
JURY_ONE_VOTE = "only one juror's vote could be counted"
JURY_NO_MAJORITY = "the jury had no majority (a tied vote, or no juror whose two passes agreed)"
EVIDENCE_UNVERIFIED_BOTH = "the decisive evidence of both sides was unverified"
EVIDENCE_WINNER_WEAK = "less than half of the winner's decisive evidence was verified"
EVIDENCE_WINNER_PARTLY = "not all of the winner's decisive evidence was verified"
# every rule as (level, sentence), in the order tried: what the debate page and README list
RULES: tuple[tuple[Confidence | Literal["at most low", "at most medium"], str], ...] = (
    ("high", PASSES_AGREE), ("medium", TIEBREAK_SIDED), ("low", TIEBREAK_NEITHER), ("low", ONE_PASS),
    ("none", SPLIT_NO_TIEBREAK), ("high", JURY_UNANIMOUS), ("medium", JURY_MAJORITY), ("low", JURY_ONE_VOTE),
    ("none", JURY_NO_MAJORITY), ("none", EVIDENCE_UNVERIFIED_BOTH), ("at most low", EVIDENCE_WINNER_WEAK),
    ("at most medium", EVIDENCE_WINNER_PARTLY),
)


@dataclass(frozen=True, slots=True)
class Rated:
    """A confidence level and the rule (one sentence) that produced it."""

    level: Confidence
    rule: str

    @property
    def no_clear_winner(self) -> bool:
        return self.level == "none"


@dataclass(frozen=True, slots=True)
class SideEvidence:
    """One side's decisive evidence: how many citations, how many of them verified."""

    cited: int = 0
    verified: int = 0

    @property
    def share(self) -> float | None:
        return self.verified / self.cited if self.cited else None


@dataclass(frozen=True, slots=True)
class EvidenceTally:
    """Each seat's decisive evidence; `checked` False: no citation was checked (none was made, or checking
    was off), and no evidence rule applies."""

    checked: bool = False
    sides: dict[str, SideEvidence] = field(default_factory=dict)


NO_EVIDENCE_CHECKS = EvidenceTally()


def evidence_tally(checks: Iterable[EvidenceCheck]) -> EvidenceTally:
    """The checks a debate recorded (`DebateRun.evidence_checks`) counted per seat. A `not_checked` citation
    (fetching was off) tells nothing either way and is left out. No checks: `NO_EVIDENCE_CHECKS`."""
    sides: dict[str, SideEvidence] = {}
    found = False
    for check in checks:
        if check.status == "not_checked":
            continue
        found = True
        side = sides.get(check.seat, SideEvidence())
        sides[check.seat] = SideEvidence(side.cited + 1, side.verified + (check.status == "verified"))
    return EvidenceTally(checked=True, sides=sides) if found else NO_EVIDENCE_CHECKS


def single_judge(usable_passes: int, split: bool, tiebreak: TiebreakOutcome) -> Rated:
    """A single judge asked twice, orders swapped (orchestrator/debate/judge.py)."""
    if usable_passes == 1:
        return Rated("low", ONE_PASS)
    if not split:
        return Rated("high", PASSES_AGREE)
    if tiebreak == "sided":
        return Rated("medium", TIEBREAK_SIDED)
    if tiebreak == "neither":
        return Rated("low", TIEBREAK_NEITHER)
    return Rated("none", SPLIT_NO_TIEBREAK)


def jury(votes: list[str | None], undecided: int) -> tuple[Rated, str | None]:
    """A jury's rating and its winner (None: no majority). `votes`: each counted juror's pick;
    `undecided`: jurors whose two passes disagreed. A majority is more than half of the counted votes;
    a tied vote is no majority, whatever the jurors' order."""
    counted = [v for v in votes if v is not None]
    if not counted:
        return Rated("none", JURY_NO_MAJORITY), None
    top = max(set(counted), key=counted.count)
    if counted.count(top) * 2 <= len(counted):
        return Rated("none", JURY_NO_MAJORITY), None
    if len(counted) == 1:
        return Rated("low", JURY_ONE_VOTE), top
    if all(v == top for v in counted) and not undecided:
        return Rated("high", JURY_UNANIMOUS), top
    return Rated("medium", JURY_MAJORITY), top


def with_evidence(rated: Rated, winner: str | None, evidence: EvidenceTally) -> Rated:
    """The agreement's rating, lowered by what the evidence checks found (never raised)."""
    if not evidence.checked or rated.no_clear_winner:
        return rated
    shares = [s.share for s in evidence.sides.values() if s.cited]
    if len(shares) >= 2 and all(share == 0 for share in shares):
        return Rated("none", EVIDENCE_UNVERIFIED_BOTH)
    own = evidence.sides.get(winner or "", SideEvidence()).share
    if own is None:
        return rated
    if own < 0.5:
        return _at_most(rated, Rated("low", EVIDENCE_WINNER_WEAK))
    if own < 1:
        return _at_most(rated, Rated("medium", EVIDENCE_WINNER_PARTLY))
    return rated


def _at_most(rated: Rated, cap: Rated) -> Rated:
    return cap if LEVELS.index(cap.level) > LEVELS.index(rated.level) else rated
