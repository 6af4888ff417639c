"""What the Postgres log writes: each function runs inside the one transaction its caller opened.

The twins of ../writes.py with the same idempotence (a debate, a turn by round, seat and kind, a
notice by level and text, a verdict by number and an ending each have one row; the team's writes
are in team.py). A debate's writes lock its row first (`for no key update`), so two processes
repeating one write cannot both insert it; votes and message ids are upserts on their keys.
Admission takes one advisory lock: the global cap spans every workspace, so every admission (a
start or a continuation, postgres/team.py), from any process, counts and takes its slot one at a time.
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.budgets import estimate_usd
from orchestrator.log.postgres.reads import Conn, lock_debate, scope_sql, tally, to_time, token_totals, values
from orchestrator.log.postgres.spend import check_spend, reservation
from orchestrator.log.records import DebateNotFoundError, Scope, Tally
from orchestrator.models import DebateSpec, Outcome, Turn, Verdict, Vote
from orchestrator.providers import estimate_cost
from orchestrator.quotas import Claim, Quota, QuotaExceeded

ADMISSION_LOCK = 0x6465_6261_7465_6164  # any fixed bigint, held for one admission's transaction


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    """Postgres text cannot hold NUL characters; SQLite can. Drop them rather than fail the write."""
    return {k: v.replace("\x00", "") if isinstance(v, str) else v for k, v in row.items()}


async def insert(conn: Conn, table: str, row: dict[str, Any], tail: str = "") -> list[Any]:
    columns = ", ".join(f'"{c}"' for c in row)
    params = ", ".join(f"%({c})s" for c in row)
    return await values(conn, f"insert into {table} ({columns}) values ({params}) {tail}", _clean(row))


async def _update(conn: Conn, table: str, key: dict[str, Any], row: dict[str, Any]) -> None:
    sets = ", ".join(f'"{c}" = %(set_{c})s' for c in row)
    where = " and ".join(f'"{c}" = %(key_{c})s' for c in key)
    args = {f"set_{c}": v for c, v in row.items()} | {f"key_{c}": v for c, v in key.items()}
    await conn.execute(f"update {table} set {sets} where {where}", _clean(args))


def debate_rows(spec: DebateSpec, at: float, runner: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    row = {
        "id": spec.id, "topic": spec.topic, "format": spec.format, "status": "running", "created_at": to_time(at),
        "platform": spec.platform, "workspace": spec.workspace, "channel": spec.channel,
        "channel_private": spec.channel_private, "thread": spec.thread, "requested_by": spec.requested_by,
        "runner": runner, "rounds_planned": spec.rounds, "rounds_completed": 0, "effort": spec.effort,
        "judge": spec.judge, "input_tokens": 0, "output_tokens": 0, "warnings": "[]", "spec": spec.model_dump_json(),
        "rematch_of": spec.rematch_of, "held_by": spec.requested_by, "held_since": to_time(at),
    }
    seats = [{"debate_id": spec.id, "label": s.label, "role": s.role, "provider": s.provider, "model": s.model,
              "position": position} for position, s in enumerate(spec.seats)]
    return row, seats


async def _insert_debate(conn: Conn, row: dict[str, Any], seats: list[dict[str, Any]]) -> None:
    await insert(conn, "debates", row)
    for seat in seats:
        await insert(conn, "seats", seat, "on conflict do nothing")


async def create_debate(conn: Conn, spec: DebateSpec, at: float, runner: str | None) -> None:
    row, seats = debate_rows(spec, at, runner)
    # admitted before its root message was posted, or a repeat: keep its status, creation time and
    # runner, fill in where it landed (as ../writes.py `create_debate`)
    created = await insert(conn, "debates", row, """
        on conflict (id) do update set workspace = coalesce(excluded.workspace, debates.workspace),
            channel_private = excluded.channel_private, thread = coalesce(excluded.thread, debates.thread),
            spec = excluded.spec, rematch_of = coalesce(excluded.rematch_of, debates.rematch_of)
        returning (xmax = 0)""")
    if created and created[0]:
        for seat in seats:
            await insert(conn, "seats", seat, "on conflict do nothing")


async def admit(conn: Conn, spec: DebateSpec, quota: Quota, at: float, runner: str | None) -> None:
    """Count what `quota` limits and insert the debate as running when every limit has room, under the
    admission lock; raises QuotaExceeded naming the first limit without room. A repeat is a no-op."""
    await conn.execute("select pg_advisory_xact_lock(%s)", [ADMISSION_LOCK])
    if await values(conn, "select 1 from debates where id = %s", [spec.id]):
        return
    claim = Claim(platform=spec.platform, workspace=spec.workspace, user=spec.requested_by, channel=spec.channel)
    quota = quota.for_cost(estimate_usd(spec)) if quota.budget is not None else quota
    await check_room(conn, quota, claim, at)
    row, seats = debate_rows(spec, at, runner)
    await _insert_debate(conn, row | {"reserved_usd": reservation(quota)}, seats)


async def check_room(conn: Conn, quota: Quota, claim: Claim, at: float) -> None:
    """Raise QuotaExceeded naming the first of `quota`'s limits without room for `claim` (a start or a
    continuation), as ../writes.py `check_room` does; the caller holds the admission lock."""
    live = "status = 'running' and held_since >= %(live_since)s"
    args = {"live_since": to_time(at - quota.stale_after_s), "platform": claim.platform,
            "workspace": claim.workspace, "user": claim.user, "channel": claim.channel,
            "window_start": to_time(at - quota.window_s)}
    here = "platform = %(platform)s and workspace is not distinct from %(workspace)s"
    if quota.max_running_per_user is not None and claim.user is not None:
        mine = await values(conn, f"select id from debates where {live} and {here} and held_by = %(user)s"
                                  " order by held_since, id", args)
        if len(mine) >= quota.max_running_per_user:
            raise QuotaExceeded("user", quota.max_running_per_user, at=at, running=tuple(mine))
    if quota.max_starts_per_user_hour is not None and claim.user is not None:
        starts = [t.timestamp() for t in await values(
            conn, f"select created_at from debates where {here} and requested_by = %(user)s"
                  " and created_at >= %(window_start)s"
                  " union all select c.at from continuations c join debates d on d.id = c.debate_id"
                  " where d.platform = %(platform)s and d.workspace is not distinct from %(workspace)s"
                  " and c.requested_by = %(user)s and c.at >= %(window_start)s order by 1", args)]
        allowed = quota.max_starts_per_user_hour
        if len(starts) >= allowed:  # room again once all but allowed - 1 of them have left the window
            raise QuotaExceeded("hourly", allowed, at=at, frees_at=starts[len(starts) - allowed] + quota.window_s)
    if quota.max_running_per_channel is not None and claim.channel is not None:
        (count,) = await values(conn, f"select count(*) from debates where {live} and {here}"
                                      " and channel = %(channel)s", args)
        if count >= quota.max_running_per_channel:
            raise QuotaExceeded("channel", quota.max_running_per_channel, at=at, count=count)
    (count,) = await values(conn, f"select count(*) from debates where {live}", args)
    if count >= quota.max_running:
        raise QuotaExceeded("global", quota.max_running, at=at, count=count)
    await check_spend(conn, quota, claim, at)


async def add_turn(conn: Conn, turn: Turn) -> int:
    row = {
        "debate_id": turn.debate_id, "round": turn.round, "seat": turn.seat, "role": turn.role, "kind": turn.kind,
        "model": turn.model, "text": turn.text, "started_at": to_time(turn.started_at),
        "duration_ms": turn.duration_ms, "input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens,
        "cost_usd": estimate_cost(turn.model, turn.input_tokens, turn.output_tokens), "status": turn.status,
        "error": turn.error,
    }
    await lock_debate(conn, turn.debate_id)
    found = await values(conn, "select id from turns where debate_id = %s and round = %s and seat = %s"
                               " and kind is not distinct from %s order by id limit 1",
                         [turn.debate_id, turn.round, turn.seat, turn.kind])
    if found:
        await _update(conn, "turns", {"id": found[0]}, row)
        return int(found[0])
    (turn_id,) = await insert(conn, "turns", row, "returning id")
    return int(turn_id)


async def add_notice(conn: Conn, debate_id: str, level: str, text: str, at: float) -> None:
    await lock_debate(conn, debate_id)
    if not await values(conn, "select 1 from notices where debate_id = %s and level is not distinct from %s"
                              " and text = %s", [debate_id, level, text.replace("\x00", "")]):
        await insert(conn, "notices", {"debate_id": debate_id, "at": to_time(at), "level": level, "text": text})


async def set_verdict(conn: Conn, debate_id: str, verdict: Verdict, at: float, number: int = 1) -> None:
    await lock_debate(conn, debate_id)
    row = {"debate_id": debate_id, "number": number, "winner": verdict.winner, "split": verdict.split,
           "reasoning": verdict.reasoning, "recommendation": verdict.recommendation, "consensus": verdict.consensus,
           "json": verdict.model_dump_json(), "at": to_time(at)}
    sets = ", ".join(f"{c} = excluded.{c}" for c in row if c not in ("debate_id", "number"))
    await insert(conn, "verdicts", row, f"on conflict (debate_id, number) do update set {sets}")


async def finish_debate(conn: Conn, debate_id: str, outcome: Outcome, at: float) -> None:
    # a stop is final: a step of the stopped debate that was already running cannot undo it
    if await lock_debate(conn, debate_id) == "cancelled":
        return
    totals = await token_totals(conn, debate_id)
    updates: dict[str, Any] = {
        "status": outcome.status, "finished_at": to_time(at), "rounds_completed": outcome.rounds_completed,
        "input_tokens": outcome.input_tokens or totals.input_tokens,
        "output_tokens": outcome.output_tokens or totals.output_tokens,
        "cost_usd": outcome.cost_usd if outcome.cost_usd is not None else totals.cost_usd,
        "warnings": json.dumps(list(outcome.warnings)), "error": outcome.error,
    }
    if outcome.rounds_planned:
        updates["rounds_planned"] = outcome.rounds_planned
    await _update(conn, "debates", {"id": debate_id}, updates)


async def record_vote(conn: Conn, vote: Vote, scope: Scope | None) -> Tally:
    visible, args = scope_sql(scope)
    if not await values(conn, f"select 1 from debates d where d.id = %(id)s and {visible}",
                        args | {"id": vote.debate_id}):
        raise DebateNotFoundError(vote.debate_id)
    row = {"debate_id": vote.debate_id, "user": vote.user, "choice": vote.choice, "platform": vote.platform,
           "at": to_time(vote.at)}
    await insert(conn, "votes", row, 'on conflict (debate_id, "user") do update set choice = excluded.choice,'
                                      " platform = excluded.platform, at = excluded.at")
    return await tally(conn, vote.debate_id)


async def set_message(conn: Conn, debate_id: str, key: str, platform: str, channel: str | None, message_id: str,
                      final: bool) -> None:
    row = {"debate_id": debate_id, "key": key, "platform": platform, "channel": channel, "message_id": message_id,
           "final": final}
    # `final` only goes up for the same message (a repeated or late write never reopens it)
    await insert(conn, "messages", row, """
        on conflict (debate_id, key) do update set platform = excluded.platform, channel = excluded.channel,
            final = case when messages.message_id = excluded.message_id then messages.final or excluded.final
                    else excluded.final end,
            message_id = excluded.message_id""")


async def claim_request(conn: Conn, key: str, at: float, keep_s: float) -> bool:
    await conn.execute("delete from request_keys where at < %s", [to_time(at - keep_s)])
    return bool(await insert(conn, "request_keys", {"key": key, "at": to_time(at)},
                              "on conflict do nothing returning 1"))


# -- the start-up sweep of debates whose process ended before logging their end ----------------------


async def running_runners(conn: Conn, prefix: str) -> list[str]:
    """The runners, named `prefix…`, that the log has running debates of."""
    like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return [str(r) for r in await values(
        conn, "select distinct runner from debates where status = 'running' and runner like %s", [like])]


async def fail_runner(conn: Conn, runner: str, error: str, at: float) -> list[str]:
    """Every debate `runner` has running ends failed with `error` (tokens summed over its turns); their ids."""
    ids = [str(r) for r in await values(conn, "select id from debates where status = 'running' and runner = %s",
                                        [runner])]
    for debate_id in ids:
        await finish_debate(conn, debate_id, Outcome(status="failed", error=error), at)
    return ids
