"""Rows of the log's tables → records, for every implementation: the same columns come back from
SQLite and Postgres, only times differ (ISO text there, `timestamptz` here), so each passes its
`epoch` conversion (`Conn.epoch`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from orchestrator.brief.models import Brief, Section, Source
from orchestrator.log.records import (
    RECOMMENDATION_SNIPPET_CHARS,
    DebateRecord,
    DebateSummary,
    NoticeRecord,
    Tally,
    TurnRecord,
)
from orchestrator.models import ChannelDefaults, DebateSpec, Interjection, Seat, Verdict

Row = dict[str, Any]
Epoch = Callable[[Any], float | None]  # a stored time → seconds since the epoch (None stays None)


_DEBATE_AS_IS = ("id", "topic", "format", "status", "platform", "workspace", "channel", "thread", "requested_by",
                 "runner", "cost_usd", "error", "rematch_of")


def debate_fields(row: Row, epoch: Epoch) -> dict[str, Any]:
    """The DebateRow fields of a `debates` row."""
    return {k: row[k] for k in _DEBATE_AS_IS} | {
        "created_at": epoch(row["created_at"]) or 0.0,
        "finished_at": epoch(row["finished_at"]),
        "channel_private": None if row["channel_private"] is None else bool(row["channel_private"]),
        "rounds_planned": row["rounds_planned"] or 0,
        "rounds_completed": row["rounds_completed"] or 0,
        "segment": row["segment"] or 1,
    }


def seat(row: Row) -> Seat:
    return Seat(label=row["label"], role=row["role"], model=row["model"])


def turn_record(row: Row, epoch: Epoch) -> TurnRecord:
    return TurnRecord(
        **{k: row[k] for k in ("id", "debate_id", "round", "seat", "role", "status", "error", "cost_usd")},
        **{k: row[k] or "" for k in ("kind", "model", "text")},
        **{k: row[k] or 0 for k in ("duration_ms", "input_tokens", "output_tokens")},
        started_at=epoch(row["started_at"]) or 0.0, tokens_estimated=bool(row.get("tokens_estimated")),
    )


def notice_record(row: Row, epoch: Epoch) -> NoticeRecord:
    return NoticeRecord(at=epoch(row["at"]) or 0.0, level=row["level"] or "info", text=row["text"])


def interjection(row: Row, epoch: Epoch) -> Interjection:
    return Interjection(id=row["id"], debate_id=row["debate_id"], author=row["author"], user=row["user"],
                        platform=row["platform"] or "cli", kind=row["kind"], text=row["text"], round=row["round"],
                        at=epoch(row["at"]) or 0.0)


def interjection_row(note: Interjection, time: Callable[[float], Any]) -> Row:
    """The `interjections` row of a note (`time`: the implementation's stored form of a timestamp)."""
    return {"id": note.id, "debate_id": note.debate_id, "author": note.author, "user": note.user,
            "platform": note.platform, "kind": note.kind, "text": note.text, "round": note.round,
            "at": time(note.at)}


def workspace_key(workspace: str | None) -> str:
    """`channel_settings` keys a channel outside any workspace (a DM) by '' so its primary key holds it once."""
    return workspace or ""


def channel_defaults(json_text: str | None) -> ChannelDefaults:
    return ChannelDefaults.model_validate_json(json_text) if json_text else ChannelDefaults()


def debate_record(
    row: Row,
    epoch: Epoch,
    *,
    seats: Iterable[Row],
    turns: Iterable[Row],
    notices: Iterable[Row],
    verdict_jsons: Iterable[str],
    interjections: Iterable[Row] = (),
    rematches: Iterable[Row] = (),
    tally: Tally,
    sources: Iterable[Row] = (),
) -> DebateRecord:
    """One debate in full from its `debates` row and the rows that hang off it: its verdicts' JSON by
    number, and its rematches as summary rows (see `summary`)."""
    verdicts = tuple(Verdict.model_validate_json(v) for v in verdict_jsons)
    brief = tuple(source(r) for r in sources)
    spec = DebateSpec.model_validate_json(row["spec"]) if row["spec"] else None
    if spec is not None and brief:  # the spec is stored without its brief, which lives in `sources`
        spec = spec.model_copy(update={"brief": Brief(sources=brief)})
    return DebateRecord(
        **debate_fields(row, epoch),
        effort=row["effort"],
        judge=row["judge"],
        input_tokens=row["input_tokens"] or 0,
        output_tokens=row["output_tokens"] or 0,
        warnings=tuple(json.loads(row["warnings"] or "[]")),
        spec=spec,
        seats=tuple(seat(r) for r in seats),
        turns=tuple(turn_record(r, epoch) for r in turns),
        verdict=verdicts[-1] if verdicts else None,
        verdicts=verdicts,
        notices=tuple(notice_record(r, epoch) for r in notices),
        interjections=tuple(interjection(r, epoch) for r in interjections),
        rematches=tuple(summary(r, epoch) for r in rematches),
        tally=tally,
        sources=brief,
    )


def source(row: Row) -> Source:
    """One source of a debate's brief from its `sources` row."""
    return Source(number=row["number"], title=row["title"], kind=row["kind"], origin=row["origin"] or "",
                  url=row["url"], size=row["size"] or 0, sha256=row["sha256"] or "", text=row["text"],
                  sections=tuple(Section(**s) for s in json.loads(row["sections"] or "[]")), note=row["note"] or "")


def summary(row: Row, epoch: Epoch) -> DebateSummary:
    """A history line from a `debates` row joined with its latest verdict (the `v_*` columns); `v_models`,
    when selected, is a JSON list of the debaters' models in seat order."""
    recommendation = row["v_recommendation"]
    if recommendation and len(recommendation) > RECOMMENDATION_SNIPPET_CHARS:
        recommendation = recommendation[: RECOMMENDATION_SNIPPET_CHARS - 1].rstrip() + "…"
    return DebateSummary(
        **debate_fields(row, epoch),
        winner=row["v_winner"],
        winner_model=row["v_model"],
        split=bool(row["v_split"]),
        confidence=row.get("v_confidence"),
        recommendation=recommendation,
        votes=row["v_votes"] or 0,
        models=tuple(json.loads(row["v_models"] or "[]")) if "v_models" in row else (),
    )
