"""A logged debate as JSON (a superset of agentsys `last-debate.json`) or a Markdown transcript.

The agentsys keys come first and keep their meaning: `proposer` / `challenger` / `exchanges[].tool`
are the seats' model strings, `verdict.winner` is the winning seat's model string (agentsys names
the winning tool). Everything else the log keeps sits beside them, with `verdict.winner_label`
holding our seat label, so `from_json` can rebuild the record exactly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from orchestrator.log.records import (
    DebateRecord,
    NoticeRecord,
    Tally,
    TurnRecord,
    from_iso,
    to_iso,
)
from orchestrator.models import DebateSpec, Seat, Verdict

SCHEMA = "debate-bot/1"


class ExportError(ValueError):
    """An import document is not a debate-bot export."""


def _debaters(record: DebateRecord) -> tuple[Seat | None, Seat | None]:
    """The proposer and challenger seats; for consensus/stances, the first two debaters."""
    proposer = next((s for s in record.seats if s.role == "proposer"), None)
    challenger = next((s for s in record.seats if s.role == "challenger"), None)
    others = [s for s in record.seats if s.role != "judge" and s not in (proposer, challenger)]
    if proposer is None and others:
        proposer = others.pop(0)
    if challenger is None and others:
        challenger = others.pop(0)
    return proposer, challenger


def _seat_model(record: DebateRecord, label: str) -> str:
    seat = record.seat(label)
    return seat.model if seat else label


def _required_iso(ts: float) -> str:
    text = to_iso(ts)
    assert text is not None
    return text


def to_json(record: DebateRecord) -> dict[str, Any]:
    """A JSON-ready dict: every agentsys `last-debate.json` key plus all the log keeps."""
    proposer, challenger = _debaters(record)
    verdict: dict[str, Any] | None = None
    if record.verdict is not None:
        v = record.verdict
        winner_seat = record.seat(v.winner)
        verdict = {
            "winner": winner_seat.model if winner_seat else v.winner,
            "reasoning": v.reasoning,
            "agreements": list(v.agreements),
            "disagreements": list(v.disagreements),
            "recommendation": v.recommendation,
            "winner_label": v.winner,
            "winner_role": winner_seat.role if winner_seat else None,
            "split": v.split,
            "unresolved": list(v.unresolved),
            "ratings": dict(v.ratings),
            "scores": [s.model_dump(mode="json") for s in v.scores],
            "consensus": v.consensus,
            "confidence": v.confidence,
            "evidence": list(v.evidence),
            "readings": [r.model_dump(mode="json") for r in v.readings],
            "tiebreak_family": v.tiebreak_family,
            "judge_shares_family_with": list(v.judge_shares_family_with),
            "team_side": record.tally.team_side([s.label for s in record.seats]),
        }
    return {
        # agentsys last-debate.json
        "id": record.id,
        "topic": record.topic,
        "proposer": proposer.model if proposer else None,
        "challenger": challenger.model if challenger else None,
        "effort": record.effort,
        "rounds_completed": record.rounds_completed,
        "max_rounds": record.rounds_planned,
        "status": record.status,
        "exchanges": [
            {
                "round": t.round,
                "role": t.role,
                "tool": t.model or _seat_model(record, t.seat),
                "response": t.text,
                "duration_ms": t.duration_ms,
            }
            for t in record.turns
        ],
        "verdict": verdict,
        "timestamp": _required_iso(record.created_at),
        # everything else
        "schema": SCHEMA,
        "format": record.format,
        "judge": record.judge,
        "platform": record.platform,
        "workspace": record.workspace,
        "channel": record.channel,
        "channel_private": record.channel_private,
        "thread": record.thread,
        "requested_by": record.requested_by,
        "created_at": _required_iso(record.created_at),
        "finished_at": to_iso(record.finished_at),
        "seats": [{"label": s.label, "role": s.role, "model": s.model, "provider": s.provider} for s in record.seats],
        "turns": [
            {
                "id": t.id,
                "round": t.round,
                "seat": t.seat,
                "role": t.role,
                "kind": t.kind,
                "model": t.model,
                "text": t.text,
                "started_at": _required_iso(t.started_at),
                "duration_ms": t.duration_ms,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
                "cost_usd": t.cost_usd,
                "status": t.status,
                "error": t.error,
            }
            for t in record.turns
        ],
        "votes": {"counts": dict(record.tally.counts), "total": record.tally.total},
        "tokens": {"input": record.input_tokens, "output": record.output_tokens},
        "cost_usd": record.cost_usd,
        "error": record.error,
        "warnings": list(record.warnings),
        "notices": [{"at": _required_iso(n.at), "level": n.level, "text": n.text} for n in record.notices],
        "spec": record.spec.model_dump(mode="json") if record.spec else None,
    }


def from_json(data: dict[str, Any]) -> DebateRecord:
    """Rebuild a DebateRecord from `to_json` output (raises ExportError on other documents)."""
    if data.get("schema") != SCHEMA:
        raise ExportError(f"not a {SCHEMA} export (schema={data.get('schema')!r})")
    try:
        verdict_data = data.get("verdict")
        verdict = None
        if verdict_data:
            verdict = Verdict(
                winner=verdict_data["winner_label"],
                split=verdict_data.get("split", False),
                reasoning=verdict_data.get("reasoning", ""),
                recommendation=verdict_data.get("recommendation", ""),
                agreements=tuple(verdict_data.get("agreements", ())),
                disagreements=tuple(verdict_data.get("disagreements", ())),
                unresolved=tuple(verdict_data.get("unresolved", ())),
                ratings=verdict_data.get("ratings", {}),
                scores=tuple(verdict_data.get("scores", ())),
                consensus=verdict_data.get("consensus"),
            )
        debate_id = data["id"]
        votes = data.get("votes") or {}
        tokens = data.get("tokens") or {}
        return DebateRecord(
            id=debate_id,
            topic=data["topic"],
            format=data["format"],
            status=data["status"],
            created_at=from_iso(data["created_at"]) or 0.0,
            finished_at=from_iso(data.get("finished_at")),
            platform=data.get("platform"),
            workspace=data.get("workspace"),
            channel=data.get("channel"),
            channel_private=data.get("channel_private"),
            thread=data.get("thread"),
            requested_by=data.get("requested_by"),
            rounds_planned=data.get("max_rounds") or 0,
            rounds_completed=data.get("rounds_completed") or 0,
            effort=data.get("effort"),
            judge=data.get("judge"),
            input_tokens=tokens.get("input", 0),
            output_tokens=tokens.get("output", 0),
            cost_usd=data.get("cost_usd"),
            error=data.get("error"),
            warnings=tuple(data.get("warnings", ())),
            spec=DebateSpec.model_validate(data["spec"]) if data.get("spec") else None,
            seats=tuple(Seat(label=s["label"], role=s["role"], model=s["model"]) for s in data["seats"]),
            turns=tuple(
                TurnRecord.model_validate({**t, "debate_id": debate_id, "started_at": from_iso(t["started_at"]) or 0.0})
                for t in data.get("turns", ())
            ),
            verdict=verdict,
            notices=tuple(
                NoticeRecord(at=from_iso(n["at"]) or 0.0, level=n["level"], text=n["text"])
                for n in data.get("notices", ())
            ),
            tally=Tally(debate_id=debate_id, counts=votes.get("counts", {}), total=votes.get("total", 0)),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ExportError(f"malformed {SCHEMA} export: {error}") from error


# ---------------------------------------------------------------------------------------------
# markdown


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _quote_block(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines()) or "> (empty)"


def _bullets(title: str, items: tuple[str, ...]) -> list[str]:
    if not items:
        return []
    return [f"**{title}**", "", *(f"- {item}" for item in items), ""]


def to_markdown(record: DebateRecord) -> str:
    """A readable transcript: topic, meta, every round's turns, the verdict, votes, tokens, cost."""
    seats = ", ".join(f"{s.label} ({s.role}: `{s.model}`)" for s in record.seats)
    lines = [
        f"# {record.topic}",
        "",
        f"*{record.format} · {seats} · {record.status} · {_date(record.created_at)} · id `{record.id}`*",
        "",
    ]
    if record.judge:
        lines += [f"Judge: `{record.judge}` · effort {record.effort or '—'}", ""]
    for notice in record.notices:
        marker = "⚠️ " if notice.level == "warning" else ""
        lines += [f"> {marker}{notice.text}", ""]

    rounds = sorted({t.round for t in record.turns})
    for number in rounds:
        planned = f" of {record.rounds_planned}" if record.rounds_planned else ""
        lines += [f"## Round {number}{planned}", ""]
        for turn in (t for t in record.turns if t.round == number):
            status = "" if turn.status == "ok" else f" — **{turn.status.upper()}**"
            lines += [f"### {turn.seat} · {turn.role} · {turn.kind} · `{turn.model}`{status}", ""]
            if turn.error:
                lines += [f"*Error: {turn.error}*", ""]
            if turn.text.strip():
                lines += [_quote_block(turn.text), ""]
            elif turn.status == "ok":
                lines += ["*(no text)*", ""]

    lines += ["## Verdict", ""]
    verdict = record.verdict
    if verdict is None:
        lines += ["*No verdict was reached.*", ""]
    else:
        winner = record.seat(verdict.winner)
        who = f"{verdict.winner} ({winner.role}, `{winner.model}`)" if winner else verdict.winner
        team = record.tally.team_text([s.label for s in record.seats])
        lines += [f"**Winner: {who}**", "", f"Judge: {verdict.winner} · Team: {team}", ""]
        if verdict.confidence_note():
            warn = "⚠️ " if verdict.split or verdict.confidence == "low" else ""
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
        if verdict.recommendation:
            lines += ["**Recommendation**", "", verdict.recommendation.strip(), ""]
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
