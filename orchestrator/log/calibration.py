"""Calibration: for debates with team side votes, how often the team sided with verdicts of each confidence
level, so a team can see whether "high" means anything in their hands. One operation for both databases,
over the `confidence` column of `verdicts` (migration m018_verdict_confidence).

The team sided with a decided verdict when its winner is among the sides with the most votes (a tie at the
top that includes it is no disagreement, as in `judge_agreement`); it sided with a No clear winner verdict
when no single side led its votes either.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from orchestrator.log.dialect import Conn
from orchestrator.log.reads import LATEST_VERDICT, filters
from orchestrator.log.records import Scope
from orchestrator.models import Verdict

LEVEL_NAMES = {"high": "high", "medium": "medium", "low": "low", "none": "no clear winner"}


def calibration_columns(verdict: Verdict) -> dict[str, Any]:
    """`confidence` (high, medium, low, none), for the figures below; the whole verdict stays in `json`."""
    return {"confidence": verdict.confidence}


class LevelFigures(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    level: str
    debates: int = 0  # debates whose latest verdict has this level and at least one side vote
    sided: int = 0  # of those, how many the team sided with

    @property
    def rate(self) -> float | None:
        return self.sided / self.debates if self.debates else None


class Calibration(BaseModel):
    """Per confidence level (always all four, in order), the debates with side votes and how many the team
    sided with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    levels: tuple[LevelFigures, ...] = tuple(LevelFigures(level=level) for level in LEVEL_NAMES)

    def text(self) -> str:
        """One line for `history` and the usage view: "Team sided with verdicts of high confidence 3 of 4
        (75%) · medium 1 of 2 (50%) · low — · no clear winner 0 of 1 (0%)"."""
        if not any(f.debates for f in self.levels):
            return "Calibration: no debate with a rated verdict has side votes yet."
        parts = [f"{LEVEL_NAMES[f.level]} {f.sided} of {f.debates} ({f.rate:.0%})" if f.rate is not None
                 else f"{LEVEL_NAMES[f.level]} —" for f in self.levels]
        return "Team sided with verdicts of confidence " + " · ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {f.level: {"debates": f.debates, "sided": f.sided, "rate": f.rate} for f in self.levels}


async def calibration(c: Conn, scope: Scope | None, platform: str | None, channel: str | None) -> Calibration:
    """The figures over the debates `scope` sees (and `platform`, `channel` when given)."""
    where, args = filters(scope, platform, channel)
    found = await c.rows(f"""
        with side_votes as (
            select debate_id, substr(choice, 6) as side, count(*) as n
            from votes where substr(choice, 1, 5) = 'side:'
            group by debate_id, substr(choice, 6)
        ),
        per_debate as (
            select s.debate_id, v.confidence as level, max(s.n) as top,
                   coalesce(max(case when s.side = v.winner then s.n end), 0) as for_winner
            from side_votes s
            join debates d on d.id = s.debate_id
            join verdicts v on {LATEST_VERDICT}
            where {where} and v.confidence is not null
            group by s.debate_id, v.confidence
        ),
        leaders as (
            select p.debate_id, count(*) as n
            from per_debate p join side_votes s on s.debate_id = p.debate_id and s.n = p.top
            group by p.debate_id
        )
        select p.level, count(*) as debates,
               sum(case when p.level = 'none' then (case when l.n > 1 then 1 else 0 end)
                        else (case when p.for_winner = p.top then 1 else 0 end) end) as sided
        from per_debate p join leaders l on l.debate_id = p.debate_id
        group by p.level""", args)
    by_level = {r["level"]: r for r in found}
    return Calibration(levels=tuple(
        LevelFigures(level=level, debates=int(row["debates"] or 0), sided=int(row["sided"] or 0))
        if (row := by_level.get(level)) else LevelFigures(level=level) for level in LEVEL_NAMES))
