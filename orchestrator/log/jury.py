"""A jury's verdict in the log: its columns on `verdicts` (migration m014_jury_columns) and the history
figures over juries, one operation for both databases. The full jury (every juror's pick, reasoning,
tokens and cost) also lives in the verdict's `json`, which `debate show` and the exports read."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from orchestrator.log.dialect import Conn
from orchestrator.log.reads import LATEST_VERDICT, filters, per_debate_votes
from orchestrator.log.records import Scope
from orchestrator.models import Verdict

JURY_COLUMNS = ("jury_size", "jury_picks", "jury_agreement")


def jury_columns(verdict: Verdict) -> dict[str, Any]:
    """`jury_size` (jurors seated), `jury_picks` (a JSON list, one seat label or null per juror, in
    panel order) and `jury_agreement` (the share of votes for the winner); all None without a jury."""
    if not verdict.jury:
        return dict.fromkeys(JURY_COLUMNS)
    return {"jury_size": len(verdict.jury), "jury_picks": json.dumps([j.winner for j in verdict.jury]),
            "jury_agreement": verdict.agreement}


class JuryFigures(BaseModel):
    """Over debates whose latest verdict is a jury's: how many, how many split (not every vote for the
    winner), and, of those with side votes, how many the team sided against (another seat got more)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    juries: int = 0
    split: int = 0
    team_debates: int = 0
    team_against: int = 0

    @property
    def split_rate(self) -> float | None:
        return self.split / self.juries if self.juries else None

    @property
    def against_rate(self) -> float | None:
        return self.team_against / self.team_debates if self.team_debates else None

    def text(self) -> str:
        """One line for `history`: "Juries: 4 · split 1 (25%) · team sided against the jury 1 of 2"."""
        if not self.juries:
            return ""
        line = f"Juries: {self.juries} · split {self.split} ({self.split / self.juries:.0%})"
        if self.team_debates:
            line += f" · team sided against the jury {self.team_against} of {self.team_debates}"
        return line


async def jury_figures(c: Conn, scope: Scope | None, platform: str | None, channel: str | None) -> JuryFigures:
    """How often juries split and the team sided against them, over what `scope` sees."""
    where, args = filters(scope, platform, channel)
    where = f"{where} and v.jury_size is not null"
    (found,) = await c.rows(f"""
        {per_debate_votes(where)}
        select (select count(*) from debates d join verdicts v on {LATEST_VERDICT} where {where}) as juries,
               (select count(*) from debates d join verdicts v on {LATEST_VERDICT}
                 where {where} and v.jury_agreement < 1) as split,
               (select count(*) from per_debate) as team,
               (select count(*) from per_debate where for_winner < top) as against""", args)
    return JuryFigures(juries=found["juries"] or 0, split=found["split"] or 0, team_debates=found["team"] or 0,
                       team_against=found["against"] or 0)
