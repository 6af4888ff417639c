"""A logged debate as a readable Markdown transcript (`debate export --format md`).

In the order it happened: the first rounds, the first verdict, then each `continue` — its round and
the verdict after it, saying whether the winner changed and why. Audience notes appear in the round
whose prompts they reached, quoted and labelled as the audience's; rematches are listed with their
winners at the end, beside the votes.
"""

from __future__ import annotations

from datetime import UTC, datetime

from orchestrator.brief.models import source_line
from orchestrator.jury_text import dissent_lines, juror_lines
from orchestrator.log.records import DebateRecord, DebateSummary, TurnRecord
from orchestrator.models import Interjection, Verdict

CONTINUATION_KIND = "continuation"  # the turn kind of a `continue` round (orchestrator/debate/continuation.py)


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _quote_block(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines()) or "> (empty)"


def _bullets(title: str, items: tuple[str, ...]) -> list[str]:
    if not items:
        return []
    return [f"**{title}**", "", *(f"- {item}" for item in items), ""]


def _note_lines(note: Interjection) -> list[str]:
    what = " (new facts, with continue)" if note.kind == "facts" else ""
    return [f"**Audience — {note.author}**{what}", "", _quote_block(note.text), ""]


def _turn_lines(turn: TurnRecord) -> list[str]:
    status = "" if turn.status == "ok" else f" — **{turn.status.upper()}**"
    lines = [f"### {turn.seat} · {turn.role} · {turn.kind} · `{turn.model}`{status}", ""]
    if turn.error:
        lines += [f"*Error: {turn.error}*", ""]
    if turn.text.strip():
        lines += [_quote_block(turn.text), ""]
    elif turn.status == "ok":
        lines += ["*(no text)*", ""]
    return lines


def _round_lines(record: DebateRecord, number: int, title: str) -> list[str]:
    lines = [f"## Round {number}{title}", ""]
    for note in (n for n in record.interjections if n.round == number):
        lines += _note_lines(note)
    for turn in (t for t in record.turns if t.round == number):
        lines += _turn_lines(turn)
    return lines


def _verdict_heading(number: int, verdict: Verdict, count: int) -> list[str]:
    if count == 1:
        return ["## Verdict", ""]
    if number == 1:
        return ["## Verdict 1", ""]
    changed = {True: "yes", False: "no", None: "not said"}[verdict.changed]
    lines = [f"## Verdict {number} (after continue) — changed: {changed}", ""]
    if verdict.change_note.strip():
        lines += [f"*Why: {verdict.change_note.strip()}*", ""]
    return lines


def _verdict_lines(record: DebateRecord, verdict: Verdict, *, latest: bool) -> list[str]:
    winner = record.seat(verdict.winner)
    who = f"{verdict.winner} ({winner.role}, `{winner.model}`)" if winner else verdict.winner
    lines = ["**No clear winner**" if verdict.no_clear_winner else f"**Winner: {who}**", ""]
    if latest:
        team = record.tally.team_text([s.label for s in record.seats])
        lines += [f"Judge: {verdict.clear_winner or 'no clear winner'} · Team: {team}", ""]
    if verdict.confidence_note():
        warn = "⚠️ " if verdict.uncertain else ""
        lines += [f"{warn}{verdict.confidence_note()}", ""]
    if verdict.family_note():
        lines += [verdict.family_note(), ""]
    if verdict.consensus:
        lines += [f"Consensus: {verdict.consensus}", ""]
    lines += _bullets("Decisive evidence", verdict.evidence)
    if verdict.split and verdict.readings:
        for reading in verdict.readings:
            lines += [f"**{reading.title}: {reading.winner} wins**", "", reading.reasoning.strip(), ""]
    elif verdict.reasoning:
        lines += ["**Reasoning**", "", verdict.reasoning.strip(), ""]
    if verdict.jury:
        lines += ["**Jury**", "", *(f"- {line}" for line in juror_lines(verdict)), ""]
        for title, reasoning in dissent_lines(verdict):
            lines += [f"**{title}**", "", reasoning.strip() or "—", ""]
    if verdict.recommendation:
        lines += ["**Recommendation**", "", verdict.recommendation.strip(), ""]
    if verdict.cruxes:
        lines += ["**Cruxes**", "", *verdict.crux_lines(), ""]
    if verdict.evidence_checks:
        lines += ["**Evidence checks**", "", *(f"- {line}" for line in verdict.evidence_lines()), ""]
    if verdict.ratings:
        ratings = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in verdict.ratings.items())
        lines += [f"**Debate quality:** {ratings}", ""]
    for score in verdict.scores:
        lines += [f"- {score.seat} ({score.stance or 'no stance'}): score {score.score:g}"]
    if verdict.scores:
        lines.append("")
    lines += _bullets("Agreements", verdict.agreements)
    lines += _bullets("Disagreements", verdict.disagreements)
    lines += _bullets("Unresolved", verdict.unresolved)
    return lines


def _rematch_line(rematch: DebateSummary) -> str:
    models = " vs ".join(f"`{m}`" for m in rematch.models) or "—"
    if rematch.winner:
        model = f" (`{rematch.winner_model}`)" if rematch.winner_model else ""
        result = f"winner {rematch.winner}{model}"
    else:
        result = f"no verdict ({rematch.status})"
    line = f"- `{rematch.id}` · {rematch.format} · {models} · {result}"
    if rematch.recommendation:
        line += f" — {rematch.recommendation}"
    return line


def _segments(record: DebateRecord) -> tuple[list[int], list[int]]:
    """The first segment's rounds, and the rounds of each `continue` (one round each), in order."""
    rounds = sorted({t.round for t in record.turns} | {n.round for n in record.interjections if n.round})
    continued = sorted({t.round for t in record.turns if t.kind == CONTINUATION_KIND})
    if not continued:
        return rounds, []
    return [r for r in rounds if r < continued[0]], [r for r in rounds if r >= continued[0]]


def to_markdown(record: DebateRecord) -> str:
    """A readable transcript: topic, meta, every round with its audience notes and turns, each verdict,
    rematches, votes, tokens, cost."""
    seats = ", ".join(f"{s.label} ({s.role}: `{s.model}`)" for s in record.seats)
    lines = [
        f"# {record.topic}",
        "",
        f"*{record.format} · {seats} · {record.status} · {_date(record.created_at)} · id `{record.id}`*",
        "",
    ]
    if record.rematch_of:
        lines += [f"Rematch of `{record.rematch_of}`.", ""]
    if record.judge:
        lines += [f"Judge: `{record.judge}` · effort {record.effort or '—'}", ""]
    for notice in record.notices:
        marker = "⚠️ " if notice.level == "warning" else ""
        lines += [f"> {marker}{notice.text}", ""]

    first, continued = _segments(record)
    planned = (record.spec.rounds if record.spec else max(first, default=0)) if continued else record.rounds_planned
    for number in first:
        lines += _round_lines(record, number, f" of {planned}" if planned else "")

    verdicts = record.verdicts or ((record.verdict,) if record.verdict else ())
    if not verdicts:
        lines += ["## Verdict", "", "*No verdict was reached.*", ""]
    for index, verdict in enumerate(verdicts):
        if index:  # the round of the `continue` that led to this verdict
            if index - 1 < len(continued):
                lines += _round_lines(record, continued[index - 1], " (continued)")
        lines += _verdict_heading(index + 1, verdict, len(verdicts))
        lines += _verdict_lines(record, verdict, latest=index == len(verdicts) - 1)
    for number in continued[max(len(verdicts) - 1, 0):]:  # a continuation still running, or without a verdict
        lines += _round_lines(record, number, " (continued)")

    waiting = [n for n in record.interjections if n.round is None]
    if waiting:
        lines += ["## Audience notes waiting for a round", ""]
        for note in waiting:
            lines += _note_lines(note)

    if record.sources:
        lines += ["## Brief", "", *(f"- {source_line(s)}" for s in record.sources), ""]
    if record.rematches:
        lines += ["## Rematches", "", *(_rematch_line(r) for r in record.rematches), ""]

    lines += ["## Votes", ""]
    if record.tally.total:
        counts = ", ".join(f"{choice}: {n}" for choice, n in sorted(record.tally.counts.items()))
        lines += [f"{record.tally.total} voter(s) — {counts}", ""]
    else:
        lines += ["No votes yet.", ""]

    cost = "unknown" if record.cost_usd is None else f"${record.cost_usd:.4f}"
    lines += [f"Tokens: {record.input_tokens:,} in / {record.output_tokens:,} out · estimated cost {cost}", ""]
    if record.warnings:
        lines += _bullets("Warnings", record.warnings)
    if record.error:
        lines += [f"**Error:** {record.error}", ""]
    return "\n".join(lines).rstrip() + "\n"
