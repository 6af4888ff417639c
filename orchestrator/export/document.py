"""A logged debate as JSON (a superset of agentsys `last-debate.json`) or a Markdown transcript
(markdown.py).

The agentsys keys come first and keep their meaning: `proposer` / `challenger` / `exchanges[].tool`
are the seats' model strings, `verdict.winner` is the winning seat's model string (agentsys names
the winning tool). Everything else the log keeps sits beside them, with `verdict.winner_label`
holding our seat label, so `from_json` can rebuild the record exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.brief.models import Brief, Source
from orchestrator.export.markdown import to_markdown
from orchestrator.log.records import (
    DebateRecord,
    DebateSummary,
    NoticeRecord,
    Tally,
    TurnRecord,
    from_iso,
    to_iso,
)
from orchestrator.models import DebateSpec, Interjection, Seat, Verdict

__all__ = ["SCHEMA", "ExportError", "from_json", "to_json", "to_markdown", "to_shared_json"]

SCHEMA = "debate-bot/1"
# Where a debate was asked and by whom, as the platform names them (Slack or Discord ids): the operator's
# export keeps them; a shared one (the page's) does not, since the page shows none of them.
PLATFORM_IDS = ("workspace", "channel", "channel_private", "thread", "requested_by")


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


def _verdict_json(record: DebateRecord, v: Verdict) -> dict[str, Any]:
    winner_seat = record.seat(v.winner) if v.clear_winner else None
    return {
        "winner": (winner_seat.model if winner_seat else v.winner) if v.clear_winner else None,
        "reasoning": v.reasoning,
        "agreements": list(v.agreements),
        "disagreements": list(v.disagreements),
        "recommendation": v.recommendation,
        "winner_label": v.clear_winner,
        "no_clear_winner": v.no_clear_winner,
        "reading_label": v.winner,  # whose reading the text came from (the winner's, when there is one)
        "winner_role": winner_seat.role if winner_seat else None,
        "split": v.split,
        "unresolved": list(v.unresolved),
        "ratings": dict(v.ratings),
        "scores": [s.model_dump(mode="json") for s in v.scores],
        "consensus": v.consensus,
        "confidence": v.confidence,
        "confidence_rule": v.confidence_rule,
        "cruxes": [c.model_dump(mode="json") for c in v.cruxes],
        "evidence_checks": [c.model_dump(mode="json") for c in v.evidence_checks],
        "evidence_counts": v.evidence_counts(),  # per seat: cited, verified, not_found, unreachable, not_checked
        "evidence": list(v.evidence),
        "readings": [r.model_dump(mode="json") for r in v.readings],
        "tiebreak_family": v.tiebreak_family,
        "judge_shares_family_with": list(v.judge_shares_family_with),
        "changed": v.changed,
        "change_note": v.change_note,
        "jury": [j.model_dump(mode="json") for j in v.jury],  # every juror's pick, reasoning, tokens and cost
        "jury_tally": v.jury_tally() if v.jury else None,
        "jury_agreement": v.agreement,
        "jury_tie": v.jury_tie,
    }


def sources_json(sources: Sequence[Source], *, text: bool = True) -> list[dict[str, Any]]:
    """The brief as the export lists it: each source's number, title, kind, origin, link, size, sha256 and
    anchors, and its text unless `text` is False (`--no-sources-text`)."""
    return [{"number": s.number, "label": s.label, "title": s.title, "kind": s.kind, "origin": s.origin,
             "url": s.url, "size": s.size, "sha256": s.sha256, "note": s.note,
             "sections": [x.model_dump(mode="json") for x in s.sections], **({"text": s.text} if text else {})}
            for s in sources]


def _spec_json(record: DebateRecord) -> dict[str, Any] | None:
    """The spec without its brief (the export's `sources` holds the brief, its text only when asked for)."""
    if record.spec is None:
        return None
    data: dict[str, Any] = record.spec.model_dump(mode="json")
    data.pop("brief", None)
    return data


def to_json(record: DebateRecord, *, sources_text: bool = True) -> dict[str, Any]:
    """A JSON-ready dict: every agentsys `last-debate.json` key plus all the log keeps. `verdict` is the
    latest verdict; `verdicts` holds every one (more than one after `continue`), each whole. `sources` is
    the brief, with each source's text unless `sources_text` is False."""
    proposer, challenger = _debaters(record)
    verdict: dict[str, Any] | None = None
    if record.verdict is not None:
        verdict = _verdict_json(record, record.verdict)
        verdict["team_side"] = record.tally.team_side([s.label for s in record.seats])
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
        "spec": _spec_json(record),
        "sources": sources_json(record.sources, text=sources_text),
        "segment": record.segment,
        "verdicts": [
            {"number": number, **_verdict_json(record, v)}
            for number, v in enumerate(record.verdicts, start=1)
        ],
        "interjections": [
            {"id": n.id, "author": n.author, "user": n.user, "platform": n.platform, "kind": n.kind,
             "round": n.round, "text": n.text, "at": _required_iso(n.at)}
            for n in record.interjections
        ],
        "rematch_of": record.rematch_of,
        "rematches": [
            {"id": r.id, "topic": r.topic, "format": r.format, "status": r.status,
             "created_at": _required_iso(r.created_at), "models": list(r.models), "winner": r.winner,
             "winner_model": r.winner_model, "split": r.split, "recommendation": r.recommendation}
            for r in record.rematches
        ],
    }


def to_shared_json(record: DebateRecord) -> dict[str, Any]:
    """`to_json` as anyone holding the debate's page link may read it: what the page shows (seats, turns,
    verdicts, the audience's display names, tokens and cost) and no platform id, neither the debate's
    (workspace, channel, thread, requester) nor an audience note's user. `from_json` still reads it."""
    document = to_json(record)
    for key in PLATFORM_IDS:
        document.pop(key, None)
    if document["spec"] is not None:
        document["spec"] = {k: v for k, v in document["spec"].items() if k not in PLATFORM_IDS}
    document["interjections"] = [{k: v for k, v in note.items() if k != "user"} for note in document["interjections"]]
    return document


_VERDICT_FIELDS = ("split", "reasoning", "recommendation", "agreements", "disagreements", "unresolved", "ratings",
                   "scores", "consensus", "confidence", "evidence", "readings", "tiebreak_family",
                   "judge_shares_family_with", "changed", "change_note", "confidence_rule", "cruxes",
                   "evidence_checks", "jury", "jury_tie")


def _verdict_from_json(data: dict[str, Any]) -> Verdict:
    """A verdict from its `_verdict_json` form (`winner` there is a model string; `winner_label` the seat)."""
    winner = data.get("winner_label") or data.get("reading_label")
    return Verdict.model_validate({"winner": winner} | {k: data[k] for k in _VERDICT_FIELDS if k in data})


def from_json(data: dict[str, Any]) -> DebateRecord:
    """Rebuild a DebateRecord from `to_json` output (raises ExportError on other documents)."""
    if data.get("schema") != SCHEMA:
        raise ExportError(f"not a {SCHEMA} export (schema={data.get('schema')!r})")
    try:
        verdict_data = data.get("verdict")
        verdict = _verdict_from_json(verdict_data) if verdict_data else None
        verdicts = tuple(_verdict_from_json(v) for v in data.get("verdicts", ()))
        if verdicts:
            verdict = verdicts[-1]
        elif verdict is not None:  # an export from before numbered verdicts
            verdicts = (verdict,)
        debate_id = data["id"]
        sources = tuple(_source_from_json(x) for x in data.get("sources", ()) if "text" in x)
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
            spec=DebateSpec.model_validate({**data["spec"], "brief": Brief(sources=sources)})
            if data.get("spec") else None,
            sources=sources,
            seats=tuple(Seat(label=s["label"], role=s["role"], model=s["model"]) for s in data["seats"]),
            turns=tuple(
                TurnRecord.model_validate({**t, "debate_id": debate_id, "started_at": from_iso(t["started_at"]) or 0.0})
                for t in data.get("turns", ())
            ),
            verdict=verdict,
            verdicts=verdicts,
            segment=data.get("segment") or 1,
            rematch_of=data.get("rematch_of"),
            interjections=tuple(
                Interjection.model_validate({**n, "debate_id": debate_id, "at": from_iso(n["at"]) or 0.0})
                for n in data.get("interjections", ())
            ),
            rematches=tuple(
                DebateSummary.model_validate({**r, "created_at": from_iso(r["created_at"]) or 0.0,
                                              "models": tuple(r.get("models", ()))})
                for r in data.get("rematches", ())
            ),
            notices=tuple(
                NoticeRecord(at=from_iso(n["at"]) or 0.0, level=n["level"], text=n["text"])
                for n in data.get("notices", ())
            ),
            tally=Tally(debate_id=debate_id, counts=votes.get("counts", {}), total=votes.get("total", 0)),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ExportError(f"malformed {SCHEMA} export: {error}") from error


def _source_from_json(data: dict[str, Any]) -> Source:
    return Source.model_validate({k: v for k, v in data.items() if k != "label"})
