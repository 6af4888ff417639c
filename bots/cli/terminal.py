"""The terminal: a sink that streams a debate as it is written, and plain renderings of the log."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from orchestrator.brief.models import source_line
from orchestrator.events import (
    DebateCancelled,
    DebateContinued,
    DebateFailed,
    DebateFinished,
    DebateStarted,
    EventBase,
    EvidenceChecked,
    Interjected,
    Notice,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    VerdictReached,
)
from orchestrator.jury_text import dissent_lines, juror_lines
from orchestrator.log import DebateRecord, DebateSummary, JudgeAgreement, SearchHit
from orchestrator.log.calibration import Calibration
from orchestrator.log.jury import JuryFigures
from orchestrator.models import DebateSpec, Interjection, Outcome, StanceScore, Verdict

_SEAT_COLOURS = {"A": "36", "B": "35", "C": "33", "D": "32"}  # cyan, magenta, yellow, green


class Style:
    def __init__(self, stream: TextIO) -> None:
        self.enabled = stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def seat(self, label: str, text: str) -> str:
        return self(text, "1;" + _SEAT_COLOURS.get(label, "37"))


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "—"


def _tokens(outcome: Outcome) -> str:
    text = f"{outcome.input_tokens:,} in / {outcome.output_tokens:,} out tokens"
    if outcome.cost_usd is not None:
        text += f" · ≈ ${outcome.cost_usd:.4f}"
    return text


def render_verdict(verdict: Verdict, spec: DebateSpec | None, style: Style) -> list[str]:
    seat = next((s for s in spec.seats if s.label == verdict.winner), None) if spec else None
    who = f"{verdict.winner} ({seat.role}, {seat.model})" if seat else verdict.winner
    lines = [style("Verdict", "1") + (": No clear winner" if verdict.no_clear_winner else
                                      f": {style.seat(verdict.winner, who)} wins")]
    if verdict.changed is not None:
        lines.append(style(("Changed: " if verdict.changed else "Unchanged: ") + verdict.change_note, "1;33"
                           if verdict.changed else "2"))
    confidence = verdict.confidence_note()
    if confidence:
        warn = verdict.uncertain
        lines.append(style(("⚠ " if warn else "") + confidence, "33" if warn else "2"))
    if verdict.family_note():
        lines.append(style("ℹ " + verdict.family_note(), "2"))
    if verdict.consensus:
        lines.append(f"Consensus: {verdict.consensus}")
    if verdict.ratings:
        lines.append("Quality: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in verdict.ratings.items()))
    if verdict.evidence:
        lines += ["", style("Decisive evidence", "1"), *(f"  • {item}" for item in verdict.evidence)]
    lines += ["", style("Recommendation", "1"), verdict.recommendation]
    if verdict.cruxes:
        lines += ["", style("Cruxes", "1"), *(f"  {line}" for line in verdict.crux_lines())]
    if verdict.evidence_checks:
        lines += ["", style("Evidence checks", "1"), *(f"  • {line}" for line in verdict.evidence_lines())]
    if verdict.split and verdict.readings:  # both readings (and the tie-break's), each with its reasoning
        for reading in verdict.readings:
            lines += ["", style(f"{reading.title}: {reading.winner} wins", "1"), reading.reasoning]
    else:
        lines += ["", style("Reasoning", "1"), verdict.reasoning]
    if verdict.jury:
        lines += ["", style("Jury", "1"), *(f"  • {line}" for line in juror_lines(verdict))]
        for title, reasoning in dissent_lines(verdict):
            lines += ["", style(title, "1"), reasoning]
    for title, items in (("Agreements", verdict.agreements), ("Disagreements", verdict.disagreements),
                         ("Unresolved", verdict.unresolved)):
        if items:
            lines += ["", style(title, "1"), *(f"  • {item}" for item in items)]
    if verdict.scores:
        lines += ["", style("Scores", "1")]
        lines += [_score_line(s) for s in verdict.scores]
    return lines


def _score_line(score: StanceScore) -> str:
    """A judge's 0–10 score with its points, or a council's Borda points with the member's place."""
    if not (score.strongest_point or score.fatal_weakness):
        return f"  {score.seat}: {score.score:g} points — {score.stance}"
    return (f"  {score.seat}: {score.score:g}/10 — {score.stance} | strongest: {score.strongest_point} | weakest: "
            f"{score.fatal_weakness}")


class TerminalSink:
    """Prints each turn as it streams: round headers, one colour per seat, progress and the verdict."""

    def __init__(self, out: TextIO | None = None, spec: DebateSpec | None = None) -> None:
        """`spec`: the debate's, for a continuation (which does not start with DebateStarted)."""
        self.out = out or sys.stdout
        self.style = Style(self.out)
        self.spec: DebateSpec | None = spec
        self._streaming: tuple[int, str, str] | None = None
        self._last_turn: tuple[int, str, str] | None = None  # the turn printed last
        self._held: list[str] = []  # evidence lines that came while a later turn streamed: printed after it

    def _print(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _print_held(self) -> None:
        for line in self._held:
            self._print(self.style(line, "2"))
        self._held = []

    async def handle(self, event: EventBase) -> None:
        match event:
            case DebateStarted(spec=spec):
                self.spec = spec
                seats = " vs ".join(f"{s.label} {s.role} ({s.model})" for s in spec.seats)
                self._print(self.style(f"Debate {spec.id} · {spec.format} · {spec.rounds} round(s)", "1"))
                self._print(f"Topic: {spec.topic}")
                self._print(f"Seats: {seats} · judge {spec.judge}")
                if spec.rematch_of:
                    self._print(f"Rematch of {spec.rematch_of}")
            case DebateContinued(segment=segment, round=n):
                self._print(self.style(f"Debate {event.debate_id} continues (continuation {segment - 1}): round {n}, "
                                       "then a new verdict", "1"))
            case Interjected(interjection=note):
                self._print(self.style(note_line(note), "1;34"))
            case RoundStarted(round=n, total=total, title=title):
                self._print()
                self._print(self.style(f"── Round {n} of {total}" + (f" · {title}" if title else "") + " ──", "1"))
            case TurnStarted(round=n, seat=label, role=role, kind=kind, model=model):
                self._streaming = self._last_turn = (n, label, kind)
                self._print()
                self._print(self.style.seat(label, f"[{label}] {role} · {kind} · {model}"))
            case TextDelta(round=n, seat=label, kind=kind, delta=delta):
                if self._streaming == (n, label, kind):
                    self.out.write(delta)
                    self.out.flush()
            case TurnCompleted(turn=turn):
                if self._streaming != (turn.round, turn.seat, turn.kind):
                    self._print(self.style.seat(turn.seat, f"[{turn.seat}] {turn.role} · {turn.kind}"))
                    self.out.write(turn.text)
                self._streaming = None
                stats = f"({turn.input_tokens:,}+{turn.output_tokens:,} tokens · {turn.duration_ms / 1000:.1f} s)"
                self._print("\n" + self.style(stats, "2"))
                self._print_held()
            case EvidenceChecked():
                self._held.append(event.line_after(self._last_turn))
                if self._streaming is None:  # never inside a turn's streaming text
                    self._print_held()
            case TurnFailed(turn=turn):
                self._streaming = None
                self._print(self.style(f"\n✗ {turn.seat} ({turn.model}) failed: {turn.error}", "31"))
                self._print_held()
            case Notice(level=level, text=text):
                warning = level == "warning"
                self._print(self.style(("⚠ " if warning else "ℹ ") + text, "33" if warning else "2"))
            case VerdictReached(verdict=verdict):
                self._print()
                for line in render_verdict(verdict, self.spec, self.style):
                    self._print(line)
            case DebateFinished(outcome=outcome):
                self._print()
                self._print(self.style(f"Done: {outcome.rounds_completed}/{outcome.rounds_planned} rounds · "
                                       f"{_tokens(outcome)} · id {event.debate_id}", "2"))
            case DebateFailed(outcome=outcome) | DebateCancelled(outcome=outcome):
                self._print(self.style(outcome.error or "Debate ended.", "31"))


def note_line(note: Interjection) -> str:
    """An audience note as the terminal shows it: who, for which round, and its text."""
    what = "New facts" if note.kind == "facts" else "Audience note"
    return f"✎ {what} from {note.author} (round {note.round or '—'}): {note.text}"


def agreement_line(agreement: JudgeAgreement) -> str:
    """How often teams sided against the judge, for the foot of `debate history`."""
    if agreement.rate is None:
        return "Teams vs the judge: no debate has side votes yet."
    plural = "s" if agreement.debates != 1 else ""
    return (f"Teams disagreed with the judge in {agreement.disagreed} of {agreement.debates} debate{plural} with "
            f"side votes ({agreement.rate:.0%}).")


def render_history(rows: list[DebateSummary], agreement: JudgeAgreement | None = None,
                   juries: JuryFigures | None = None, calibration: Calibration | None = None) -> str:
    if not rows:
        return "No debates yet. Start one: debate run \"Should we …?\""
    lines = []
    for row in rows:
        outcome = (f"winner {row.winner} ({row.winner_model})" if row.winner else
                   "no clear winner" if row.confidence == "none" else row.status)
        if row.split:
            outcome += ", split"
        lines.append(f"{row.id}  {_when(row.created_at)}  {row.format:<9} {outcome:<40.40} "
                     f"votes {row.votes:<3} {row.topic[:60]}")
    if agreement is not None:
        lines += ["", agreement_line(agreement)]
    if juries is not None and juries.text():
        lines.append(juries.text())
    if calibration is not None:
        lines.append(calibration.text())
    return "\n".join(lines)


def render_hits(hits: list[SearchHit]) -> str:
    if not hits:
        return "No matches."
    return "\n".join(f"{h.debate_id}  {_when(h.created_at)}  [{h.where}] {h.topic[:60]}\n    {h.snippet}" for h in hits)


def render_record(record: DebateRecord, style: Style) -> str:
    lines = [style(f"Debate {record.id}", "1") + f" · {record.format} · {record.status} · {_when(record.created_at)}",
             f"Topic: {record.topic}",
             "Seats: " + ", ".join(f"{s.label} {s.role} ({s.model})" for s in record.seats),
             f"Rounds: {record.rounds_completed}/{record.rounds_planned} · tokens {record.input_tokens:,} in / "
             f"{record.output_tokens:,} out" + (f" · ≈ ${record.cost_usd:.4f}" if record.cost_usd is not None else "")]
    if record.error:
        lines.append(style(f"Error: {record.error}", "31"))
    lines += [style(f"⚠ {w}", "33") for w in record.warnings]
    if record.sources:
        lines += ["", style("Brief", "1"), *(f"  {source_line(s)}" for s in record.sources)]
    for turn in record.turns:
        lines += ["", style.seat(turn.seat, f"Round {turn.round} · [{turn.seat}] {turn.role} · {turn.kind}")]
        lines.append(turn.text if turn.status == "ok" else style(f"failed: {turn.error}", "31"))
    if record.interjections:
        lines += ["", style("From the audience", "1"), *(f"  {note_line(n)}" for n in record.interjections)]
    verdicts = record.verdicts or ((record.verdict,) if record.verdict else ())
    for number, verdict in enumerate(verdicts, start=1):
        title = [style(f"Verdict {number} of {len(verdicts)}", "1")] if len(verdicts) > 1 else []
        lines += ["", *title, *render_verdict(verdict, record.spec, style)]
    if record.tally.total:
        lines += ["", "Votes: " + ", ".join(f"{k} {v}" for k, v in sorted(record.tally.counts.items()))]
    if record.verdict:
        labels = [s.label for s in record.seats]
        lines.append(f"Judge: {record.verdict.winner} · Team: {record.tally.team_text(labels)}")
    if record.rematch_of:
        lines += ["", f"Rematch of {record.rematch_of}"]
    if record.rematches:
        lines += ["", style("Rematches", "1"), *_side_by_side(record)]
    return "\n".join(lines)


def _side_by_side(record: DebateRecord) -> list[str]:
    """This debate's verdict and each rematch's, one line each: format, debaters, winner."""
    def winner(label: str | None, models: tuple[str, ...]) -> str:
        if label is None:
            return "no verdict"
        index = "ABCD".find(label)
        model = f" ({models[index]})" if 0 <= index < len(models) else ""
        return f"{label}{model} wins"

    own = tuple(s.model for s in record.seats)
    rows = [("this debate", record.format, own, winner(record.verdict.winner if record.verdict else None, own))]
    rows += [(r.id, r.format, r.models, winner(r.winner, r.models) if r.status == "completed" else r.status)
             for r in record.rematches]
    return [f"  {name:<12} {fmt:<9} {' vs '.join(models) or '—':<48} {result}" for name, fmt, models, result in rows]
