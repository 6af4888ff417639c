"""Queries the store runs inside its database thread: rows in, records out."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from sqlite_utils import Database
from sqlite_utils.db import Table

from orchestrator.log.records import (
    MIN_ID_PREFIX,
    RECOMMENDATION_SNIPPET_CHARS,
    AmbiguousIdError,
    DebateNotFoundError,
    DebateRecord,
    DebateSummary,
    NoticeRecord,
    Tally,
    TokenTotals,
    TurnRecord,
    from_iso,
)
from orchestrator.models import DebateSpec, Seat, Verdict
from orchestrator.providers.pricing import estimate_cost

T = TypeVar("T")


def table(db: Database, name: str) -> Table:
    table = db[name]
    assert isinstance(table, Table)
    return table


def outside_transaction(fn: Callable[[Database], T]) -> Callable[[Database], T]:
    """Wrap `fn` so it commits the transaction the writer opened and runs with none open."""

    def run(db: Database) -> T:
        if db.conn.in_transaction:
            db.conn.execute("COMMIT")
        return fn(db)

    return run


def require_debate(db: Database, debate_id: str) -> None:
    if db.execute("select 1 from debates where id = ?", [debate_id]).fetchone() is None:
        raise DebateNotFoundError(debate_id)


def dict_rows(db: Database, sql: str, args: list[Any] | dict[str, Any]) -> list[dict[str, Any]]:
    cursor = db.execute(sql, args)
    names = [c[0] for c in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def tally(db: Database, debate_id: str) -> Tally:
    rows = db.execute(
        "select choice, count(*) from votes where debate_id = ? group by choice order by choice",
        [debate_id],
    ).fetchall()
    counts = {choice: n for choice, n in rows}
    return Tally(debate_id=debate_id, counts=counts, total=sum(counts.values()))


def token_totals(db: Database, debate_id: str) -> TokenTotals:
    rows = db.execute(
        "select model, input_tokens, output_tokens from turns where debate_id = ?", [debate_id]
    ).fetchall()
    cost: float | None = 0.0
    for model, input_tokens, output_tokens in rows:
        turn_cost = estimate_cost(model or "", input_tokens or 0, output_tokens or 0)
        if turn_cost is None:
            if input_tokens or output_tokens:
                cost = None
        elif cost is not None:
            cost += turn_cost
    return TokenTotals(
        debate_id=debate_id,
        turns=len(rows),
        input_tokens=sum(r[1] or 0 for r in rows),
        output_tokens=sum(r[2] or 0 for r in rows),
        cost_usd=cost,
    )


def resolve_id(db: Database, id_or_prefix: str) -> str | None:
    key = id_or_prefix.strip()
    if not key:
        return None
    if db.execute("select 1 from debates where id = ?", [key]).fetchone():
        return key
    if len(key) < MIN_ID_PREFIX:
        return None
    matches = [
        r[0]
        for r in db.execute(
            "select id from debates where substr(id, 1, ?) = ? order by created_at desc limit 11",
            [len(key), key],
        ).fetchall()
    ]
    if len(matches) > 1:
        raise AmbiguousIdError(key, matches)
    return matches[0] if matches else None


def row_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The DebateRow fields of a `debates` row."""
    return {
        "id": row["id"],
        "topic": row["topic"],
        "format": row["format"],
        "status": row["status"],
        "created_at": from_iso(row["created_at"]) or 0.0,
        "finished_at": from_iso(row["finished_at"]),
        "platform": row["platform"],
        "channel": row["channel"],
        "thread": row["thread"],
        "requested_by": row["requested_by"],
        "rounds_planned": row["rounds_planned"] or 0,
        "rounds_completed": row["rounds_completed"] or 0,
        "cost_usd": row["cost_usd"],
        "error": row["error"],
    }


def load_record(db: Database, debate_id: str) -> DebateRecord:
    row = dict_rows(db, "select * from debates where id = ?", [debate_id])[0]
    seats = tuple(
        Seat(label=r["label"], role=r["role"], model=r["model"])
        for r in dict_rows(db, "select * from seats where debate_id = ? order by position, label", [debate_id])
    )
    turns = tuple(
        TurnRecord(
            id=r["id"],
            debate_id=r["debate_id"],
            round=r["round"],
            seat=r["seat"],
            role=r["role"],
            kind=r["kind"] or "",
            model=r["model"] or "",
            text=r["text"] or "",
            started_at=from_iso(r["started_at"]) or 0.0,
            duration_ms=r["duration_ms"] or 0,
            input_tokens=r["input_tokens"] or 0,
            output_tokens=r["output_tokens"] or 0,
            status=r["status"],
            error=r["error"],
            cost_usd=r["cost_usd"],
        )
        for r in dict_rows(db, "select * from turns where debate_id = ? order by round, id", [debate_id])
    )
    verdict_row = db.execute("select json from verdicts where debate_id = ?", [debate_id]).fetchone()
    notices = tuple(
        NoticeRecord(at=from_iso(r["at"]) or 0.0, level=r["level"] or "info", text=r["text"])
        for r in dict_rows(db, "select * from notices where debate_id = ? order by id", [debate_id])
    )
    return DebateRecord(
        **row_fields(row),
        effort=row["effort"],
        judge=row["judge"],
        input_tokens=row["input_tokens"] or 0,
        output_tokens=row["output_tokens"] or 0,
        warnings=tuple(json.loads(row["warnings"] or "[]")),
        spec=DebateSpec.model_validate_json(row["spec"]) if row["spec"] else None,
        seats=seats,
        turns=turns,
        verdict=Verdict.model_validate_json(verdict_row[0]) if verdict_row and verdict_row[0] else None,
        notices=notices,
        tally=tally(db, debate_id),
    )


def summary(row: dict[str, Any]) -> DebateSummary:
    recommendation = row["v_recommendation"]
    if recommendation and len(recommendation) > RECOMMENDATION_SNIPPET_CHARS:
        recommendation = recommendation[: RECOMMENDATION_SNIPPET_CHARS - 1].rstrip() + "…"
    return DebateSummary(
        **row_fields(row),
        winner=row["v_winner"],
        winner_model=row["v_model"],
        split=bool(row["v_split"]),
        recommendation=recommendation,
        votes=row["v_votes"] or 0,
    )
