"""What the store writes: each function builds its rows up front and returns the `fn(db)` that the
database thread runs inside one IMMEDIATE transaction. Text arrives redacted (the engine redacts
every event where it is emitted); the log stores it as given. A debate's writes may come twice (a
durable debate's step runs again after a restart), so each is idempotent: a debate, a turn (by round,
seat and kind), a notice (by level and text), a verdict (by number) and an ending each have one row.
The team's writes (audience notes, continuations, channel settings) are in team.py."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from sqlite_utils import Database

from orchestrator.budgets import estimate_usd
from orchestrator.log.reads import require_debate, scope_sql, table, tally, token_totals
from orchestrator.log.records import DebateNotFoundError, Scope, Tally, from_iso, to_iso
from orchestrator.log.spend import check_spend, reservation
from orchestrator.models import DebateSpec, Outcome, Turn, Verdict, Vote
from orchestrator.providers import estimate_cost
from orchestrator.quotas import Claim, Quota, QuotaExceeded


def _debate_rows(spec: DebateSpec, at: float, runner: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    row = {
        "id": spec.id,
        "topic": spec.topic,
        "format": spec.format,
        "status": "running",
        "created_at": to_iso(at),
        "platform": spec.platform,
        "workspace": spec.workspace,
        "channel": spec.channel,
        "channel_private": int(spec.channel_private),
        "thread": spec.thread,
        "requested_by": spec.requested_by,
        "runner": runner,
        "rounds_planned": spec.rounds,
        "rounds_completed": 0,
        "effort": spec.effort,
        "judge": spec.judge,
        "input_tokens": 0,
        "output_tokens": 0,
        "warnings": "[]",
        "spec": spec.model_dump_json(),
        "rematch_of": spec.rematch_of,
        "held_by": spec.requested_by,
        "held_since": to_iso(at),
    }
    seats = [
        {"debate_id": spec.id, "label": s.label, "role": s.role, "provider": s.provider, "model": s.model,
         "position": position}
        for position, s in enumerate(spec.seats)
    ]
    return row, seats


# what a debate learns between its admission and its start (the thread under the root message it posted)
_FILLED_IN_AT_START = ("workspace", "channel_private", "thread", "spec", "rematch_of")


def create_debate(spec: DebateSpec, at: float, runner: str | None) -> Callable[[Database], None]:
    row, seats = _debate_rows(spec, at, runner)

    def fn(db: Database) -> None:
        debates = table(db, "debates")
        if debates.count_where("id = ?", [spec.id]):
            # admitted (`admit`) before its root message was posted, or a repeat: keep its status,
            # creation time and runner, fill in where it landed
            updates = {k: row[k] for k in _FILLED_IN_AT_START if row[k] is not None}
            debates.update(spec.id, updates)
            return
        debates.insert(row)
        table(db, "seats").insert_all(seats)

    return fn


def admit(spec: DebateSpec, quota: Quota, at: float, runner: str | None) -> Callable[[Database], None]:
    """Count what `quota` limits and, when every limit has room, insert the debate as running — in the
    one IMMEDIATE transaction the database thread runs this in, so no other writer (thread or process)
    can count in between. Raises QuotaExceeded naming the first limit without room; a repeat is a no-op."""
    row, seats = _debate_rows(spec, at, runner)
    claim = Claim(platform=spec.platform, workspace=spec.workspace, user=spec.requested_by, channel=spec.channel)
    quota = quota.for_cost(estimate_usd(spec)) if quota.budget is not None else quota

    def fn(db: Database) -> None:
        debates = table(db, "debates")
        if debates.count_where("id = ?", [spec.id]):
            return
        check_room(db, quota, claim, at)
        debates.insert(row | {"reserved_usd": reservation(quota)})
        table(db, "seats").insert_all(seats)

    return fn


def check_room(db: Database, quota: Quota, claim: Claim, at: float) -> None:
    """Raise QuotaExceeded naming the first of `quota`'s limits without room for `claim` (a start or a
    continuation); the caller's transaction holds the database, so nothing can take the room after.

    A running debate holds its slot for whoever holds it (`held_by`: who started it, or who continued
    it last) since when (`held_since`), not for its requester since its creation; a start in the
    hourly window is a debate created or a continuation asked for."""
    live = "status = 'running' and held_since >= :live_since"
    args = {"live_since": to_iso(at - quota.stale_after_s), "platform": claim.platform,
            "workspace": claim.workspace, "user": claim.user, "channel": claim.channel,
            "window_start": to_iso(at - quota.window_s)}
    here = "platform = :platform and workspace is :workspace"
    if quota.max_running_per_user is not None and claim.user is not None:
        mine = [r[0] for r in db.execute(
            f"select id from debates where {live} and {here} and held_by = :user order by held_since, id",
            args).fetchall()]
        if len(mine) >= quota.max_running_per_user:
            raise QuotaExceeded("user", quota.max_running_per_user, at=at, running=tuple(mine))
    if quota.max_starts_per_user_hour is not None and claim.user is not None:
        starts = [from_iso(r[0]) or 0.0 for r in db.execute(
            f"select created_at from debates where {here} and requested_by = :user and created_at >= :window_start"
            " union all select c.at from continuations c join debates d on d.id = c.debate_id"
            " where d.platform = :platform and d.workspace is :workspace and c.requested_by = :user"
            " and c.at >= :window_start order by 1", args).fetchall()]
        allowed = quota.max_starts_per_user_hour
        if len(starts) >= allowed:  # room again once all but allowed - 1 of them have left the window
            frees_at = starts[len(starts) - allowed] + quota.window_s
            raise QuotaExceeded("hourly", allowed, at=at, frees_at=frees_at)
    if quota.max_running_per_channel is not None and claim.channel is not None:
        (count,) = db.execute(f"select count(*) from debates where {live} and {here} and channel = :channel",
                              args).fetchone()
        if count >= quota.max_running_per_channel:
            raise QuotaExceeded("channel", quota.max_running_per_channel, at=at, count=count)
    (count,) = db.execute(f"select count(*) from debates where {live}", args).fetchone()
    if count >= quota.max_running:
        raise QuotaExceeded("global", quota.max_running, at=at, count=count)
    check_spend(db, quota, claim, at)


def add_turn(turn: Turn) -> Callable[[Database], int]:
    row = {
        "debate_id": turn.debate_id,
        "round": turn.round,
        "seat": turn.seat,
        "role": turn.role,
        "kind": turn.kind,
        "model": turn.model,
        "text": turn.text,
        "started_at": to_iso(turn.started_at),
        "duration_ms": turn.duration_ms,
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "cost_usd": estimate_cost(turn.model, turn.input_tokens, turn.output_tokens),
        "status": turn.status,
        "error": turn.error,
    }

    def fn(db: Database) -> int:
        require_debate(db, turn.debate_id)
        # one row per (debate, round, seat, kind): a write repeated after a restart, or a turn run
        # again, updates that row (its id, and so its FTS entry, stays)
        found = db.execute("select id from turns where debate_id = ? and round = ? and seat = ? and kind = ?"
                           " order by id limit 1", [turn.debate_id, turn.round, turn.seat, turn.kind]).fetchone()
        if found is not None:
            table(db, "turns").update(found[0], row)
            return int(found[0])
        turns = table(db, "turns").insert(row)
        assert turns.last_rowid is not None
        return turns.last_rowid

    return fn


def add_notice(debate_id: str, level: str, text: str, at: float) -> Callable[[Database], None]:
    row = {"debate_id": debate_id, "at": to_iso(at), "level": level, "text": text}

    def fn(db: Database) -> None:
        require_debate(db, debate_id)
        # the same words at the same level are the same notice (a repeated write, after a restart)
        if not db.execute("select 1 from notices where debate_id = ? and level is ? and text = ?",
                          [debate_id, level, text]).fetchone():
            table(db, "notices").insert(row)

    return fn


def set_verdict(debate_id: str, verdict: Verdict, at: float, number: int = 1) -> Callable[[Database], None]:
    row = {
        "debate_id": debate_id,
        "number": number,
        "winner": verdict.winner,
        "split": int(verdict.split),
        "reasoning": verdict.reasoning,
        "recommendation": verdict.recommendation,
        "consensus": verdict.consensus,
        "json": verdict.model_dump_json(),
        "at": to_iso(at),
    }
    columns = ", ".join(row)
    sets = ", ".join(f"{c} = excluded.{c}" for c in row if c not in ("debate_id", "number"))

    def fn(db: Database) -> None:
        require_debate(db, debate_id)
        # INSERT … ON CONFLICT DO UPDATE: the rowid, and so the FTS entry, survives a repeated write
        db.execute(f"insert into verdicts ({columns}) values ({', '.join(':' + c for c in row)})"
                   f" on conflict (debate_id, number) do update set {sets}", row)

    return fn


def finish_debate(debate_id: str, outcome: Outcome, at: float) -> Callable[[Database], None]:
    def fn(db: Database) -> None:
        require_debate(db, debate_id)
        # a stop is final: a step of the stopped debate that was already running cannot undo it
        (status,) = db.execute("select status from debates where id = ?", [debate_id]).fetchone()
        if status == "cancelled":
            return
        totals = token_totals(db, debate_id)
        updates: dict[str, Any] = {
            "status": outcome.status,
            "finished_at": to_iso(at),
            "rounds_completed": outcome.rounds_completed,
            "input_tokens": outcome.input_tokens or totals.input_tokens,
            "output_tokens": outcome.output_tokens or totals.output_tokens,
            "cost_usd": outcome.cost_usd if outcome.cost_usd is not None else totals.cost_usd,
            "warnings": json.dumps(list(outcome.warnings)),
            "error": outcome.error,
        }
        if outcome.rounds_planned:
            updates["rounds_planned"] = outcome.rounds_planned
        table(db, "debates").update(debate_id, updates)

    return fn


def record_vote(vote: Vote, scope: Scope | None) -> Callable[[Database], Tally]:
    row = {"debate_id": vote.debate_id, "user": vote.user, "choice": vote.choice, "platform": vote.platform,
           "at": to_iso(vote.at)}
    visible, args = scope_sql(scope)

    def fn(db: Database) -> Tally:
        if not db.execute(f"select 1 from debates d where d.id = :id and {visible}", args | {"id": vote.debate_id}
                          ).fetchone():
            raise DebateNotFoundError(vote.debate_id)
        table(db, "votes").upsert(row, pk=("debate_id", "user"))
        return tally(db, vote.debate_id)

    return fn


def set_message(
    debate_id: str, key: str, platform: str, channel: str | None, message_id: str, final: bool = False
) -> Callable[[Database], None]:
    row = {"debate_id": debate_id, "key": key, "platform": platform, "channel": channel, "message_id": message_id,
           "final": int(final)}

    def fn(db: Database) -> None:
        # `final` only goes up for the same message (a repeated or late write never reopens it)
        db.execute(
            "insert into messages (debate_id, key, platform, channel, message_id, final)"
            " values (:debate_id, :key, :platform, :channel, :message_id, :final)"
            " on conflict (debate_id, key) do update set platform = excluded.platform, channel = excluded.channel,"
            " final = case when message_id = excluded.message_id then max(final, excluded.final)"
            " else excluded.final end, message_id = excluded.message_id",
            row,
        )

    return fn


def claim_request(key: str, keep_s: float) -> Callable[[Database], bool]:
    at = time.time()

    def fn(db: Database) -> bool:
        db.execute("delete from request_keys where at < ?", [to_iso(at - keep_s)])
        cursor = db.execute("insert or ignore into request_keys (key, at) values (?, ?)", [key, to_iso(at)])
        return cursor.rowcount == 1

    return fn


# -- the start-up sweep of debates whose process ended before logging their end ----------------------


def running_runners(prefix: str) -> Callable[[Database], list[str]]:
    """The runners, named `prefix…`, that the log has running debates of."""

    def fn(db: Database) -> list[str]:
        return [r[0] for r in db.execute("select distinct runner from debates where status = 'running'"
                                         " and runner like ? escape '\\'", [_like_prefix(prefix)]).fetchall()]

    return fn


def fail_runner(runner: str, error: str, at: float) -> Callable[[Database], list[str]]:
    """Every debate `runner` has running ends failed with `error` (tokens summed over its turns); their ids."""

    def fn(db: Database) -> list[str]:
        ids = [r[0] for r in db.execute("select id from debates where status = 'running' and runner = ?",
                                        [runner]).fetchall()]
        for debate_id in ids:
            finish_debate(debate_id, Outcome(status="failed", error=error), at)(db)
        return ids

    return fn


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
