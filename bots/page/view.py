"""What the page shows of one logged debate, arranged for the templates: rounds with their turns and
audience notes, the verdicts, the team's votes beside each judge's pick, tokens and cost."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from orchestrator.log.records import DebateRecord, TurnRecord
from orchestrator.models import Interjection, Verdict


@dataclass(frozen=True)
class Round:
    number: int
    turns: list[TurnRecord] = field(default_factory=list)
    notes: list[Interjection] = field(default_factory=list)  # audience notes its prompts carried


@dataclass(frozen=True)
class VerdictView:
    number: int
    verdict: Verdict
    winner_model: str
    team: str  # the team's side votes in a few words
    team_side: str | None  # the seat most voters sided with, when one leads


@dataclass(frozen=True)
class PageView:
    record: DebateRecord
    rounds: list[Round]
    waiting_notes: list[Interjection]  # notes no round has taken yet
    verdicts: list[VerdictView]
    votes: dict[str, int]  # every choice the team voted, with its count
    live: bool  # still running: the page follows it

    @property
    def headline(self) -> str:
        """One line for link previews: the winner and the recommendation, or where the debate stands."""
        if not self.verdicts:
            return f"{self.record.format} debate, {self.record.status}"
        last = self.verdicts[-1].verdict
        if last.no_clear_winner:
            return f"No clear winner. {last.recommendation}".strip()
        confidence = f" ({last.confidence} confidence)" if last.confidence else ""
        return f"Winner: {last.winner}{confidence}. {last.recommendation}".strip()


def page_view(record: DebateRecord) -> PageView:
    labels = [seat.label for seat in record.seats if seat.role != "judge"]
    by_round: dict[int, Round] = defaultdict(lambda: Round(0))
    for turn in record.turns:
        by_round.setdefault(turn.round, Round(turn.round)).turns.append(turn)
    waiting: list[Interjection] = []
    for note in record.interjections:
        if note.round is None:
            waiting.append(note)
        else:
            by_round.setdefault(note.round, Round(note.round)).notes.append(note)
    verdicts = record.verdicts or ((record.verdict,) if record.verdict else ())
    views = [
        VerdictView(number=index + 1, verdict=verdict,
                    winner_model=seat.model if (seat := record.seat(verdict.winner)) else "",
                    team=record.tally.team_text(labels), team_side=record.tally.team_side(labels))
        for index, verdict in enumerate(verdicts)
    ]
    return PageView(record=record, rounds=[by_round[n] for n in sorted(by_round)], waiting_notes=waiting,
                    verdicts=views, votes=dict(sorted(record.tally.counts.items())),
                    live=record.status in ("pending", "running"))


def page_fingerprint(record: DebateRecord) -> tuple[object, ...]:
    """What changes the page of a logged debate (turns and notes are only ever added); hashable."""
    verdict = record.verdict
    return (record.status, len(record.turns), len(record.verdicts), len(record.interjections), len(record.notices),
            tuple(sorted(record.tally.counts.items())), record.rounds_completed, record.cost_usd, record.error,
            record.finished_at, None if verdict is None else (verdict.winner, verdict.recommendation))
