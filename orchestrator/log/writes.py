"""What the log writes, written once for both databases, each inside the one transaction its caller opened.

Text arrives redacted (the engine redacts every event where it is emitted); the log stores it as given. A debate's
writes may come twice (a durable debate's step runs again after a restart), so each is idempotent, and one that
checks before it writes locks the debate's row first (`Conn.send_lock`), so two processes repeating it cannot both
insert. The writes of a debate's run send every statement before reading any answer: one round trip each on Postgres
(dialect.py). The team's writes (audience notes, continuations, channel settings) are in team.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from orchestrator.brief.models import Brief
from orchestrator.budgets import estimate_usd
from orchestrator.log.calibration import calibration_columns
from orchestrator.log.dialect import Conn, Sent
from orchestrator.log.jury import jury_columns
from orchestrator.log.reads import scope_sql, send_turn_tokens, tally
from orchestrator.log.records import DebateNotFoundError, Scope, Tally
from orchestrator.log.spend import Spend, count_spend, reservation
from orchestrator.models import DebateSpec, Outcome, Turn, Verdict, Vote
from orchestrator.providers import estimate_cost
from orchestrator.quotas import Claim, Quota, QuotaExceeded


def _debate_rows(c: Conn, spec: DebateSpec, at: float,
                 runner: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    row = {
        "id": spec.id, "topic": spec.topic, "format": spec.format, "status": "running", "created_at": c.time(at),
        "platform": spec.platform, "workspace": spec.workspace, "channel": spec.channel,
        "channel_private": spec.channel_private, "thread": spec.thread, "requested_by": spec.requested_by,
        "runner": runner, "rounds_planned": spec.rounds, "rounds_completed": 0, "effort": spec.effort,
        "judge": spec.judge, "input_tokens": 0, "output_tokens": 0, "warnings": "[]",
        "spec": spec.model_dump_json(exclude={"brief"}),  # the brief's sources have their own table
        "rematch_of": spec.rematch_of, "held_by": spec.requested_by, "held_since": c.time(at),
    }
    seats = [{"debate_id": spec.id, "label": s.label, "role": s.role, "provider": s.provider, "model": s.model,
              "position": position} for position, s in enumerate(spec.seats)]
    return row, seats


async def _send_debate(c: Conn, spec: DebateSpec, at: float, runner: str | None, tail: str,
                       reserved_usd: float | None = None) -> None:
    """Send the debate's row (`tail`: what becomes of a row there already; `reserved_usd`: what its admission
    reserved of a budget) and its seats' (a seat there already stays: the same spec's)."""
    row, seats = _debate_rows(c, spec, at, runner)
    await c.send_insert("debates", row | {"reserved_usd": reserved_usd}, tail)
    await c.send_insert_rows("seats", seats, "on conflict do nothing")
    if spec.brief.sources:
        await send_sources(c, spec.id, spec.brief, at)


async def send_sources(c: Conn, debate_id: str, brief: Brief, at: float) -> None:
    """The brief's sources, one row each by number (a source there already stays: a write repeated)."""
    rows = [{"debate_id": debate_id, "number": s.number, "title": s.title, "kind": s.kind, "origin": s.origin,
             "url": s.url, "size": s.size, "sha256": s.sha256, "text": s.text, "note": s.note or None,
             "sections": json.dumps([x.model_dump() for x in s.sections]), "at": c.time(at)}
            for s in brief.sources]
    await c.send_insert_rows("sources", rows, "on conflict do nothing")


# what a debate learns between its admission and its start (the thread under the root message it posted)
_FILLED_IN_AT_START = ("workspace", "channel_private", "thread", "spec", "rematch_of")


async def create_debate(c: Conn, spec: DebateSpec, at: float, runner: str | None) -> None:
    """Insert the debate (running, owned by `runner`) and its seats. When it is there already (admitted
    before its root message was posted, or a repeat) keep its status, creation time and runner, and
    fill in only where it landed."""
    row, _ = _debate_rows(c, spec, at, runner)
    filled = [k for k in _FILLED_IN_AT_START if row[k] is not None]
    sets = ", ".join(f'"{k}" = excluded."{k}"' for k in filled)
    # a row that says so already (the worker's start after the front's) is not written again: on Postgres an
    # update is a new row version, its topic's tsvector and every index entry made again
    changed = " or ".join(f'debates."{k}" is distinct from excluded."{k}"' for k in filled)
    await _send_debate(c, spec, at, runner, f"on conflict (id) do update set {sets} where {changed}" if sets
                       else "on conflict (id) do nothing")


async def admit(c: Conn, spec: DebateSpec, quota: Quota, at: float, runner: str | None) -> None:
    """Count what `quota` limits and insert the debate as running when every limit has room, under the
    admission lock; raises QuotaExceeded naming the first limit without room. A repeat is a no-op. The global
    cap spans every workspace, so every admission (a start or a continuation, team.py), from any process,
    counts and takes its slot one at a time (`Conn.lock_admission`)."""
    await c.lock_admission()
    there = await c.send("select 1 from debates where id = :id", {"id": spec.id})
    claim = Claim(platform=spec.platform, workspace=spec.workspace, user=spec.requested_by, channel=spec.channel)
    quota = quota.for_cost(estimate_usd(spec)) if quota.budget is not None else quota
    room = await count_room(c, quota, claim, at)  # sent with the lookup: one wait for both
    if await there.values():
        return
    await room.check()
    # only a `create_debate` of the same spec can insert it meanwhile (it takes no admission lock)
    await _send_debate(c, spec, at, runner, "on conflict (id) do nothing", reservation(quota))


async def check_room(c: Conn, quota: Quota, claim: Claim, at: float) -> None:
    """Raise QuotaExceeded naming the first of `quota`'s limits without room for `claim` (a start or a
    continuation); the caller holds the admission lock, so nothing can take the room after."""
    await (await count_room(c, quota, claim, at)).check()


@dataclass
class Room:
    """What admission counts, sent together (`count_room`); `check` reads the answers in order."""

    c: Conn
    quota: Quota
    at: float
    mine: Sent | None
    starts: Sent | None
    in_channel: Sent | None
    running: Sent
    spend: Spend

    async def check(self) -> None:
        quota, at = self.quota, self.at
        if self.mine is not None and quota.max_running_per_user is not None:
            mine = await self.mine.values()
            if len(mine) >= quota.max_running_per_user:
                raise QuotaExceeded("user", quota.max_running_per_user, at=at, running=tuple(mine))
        if self.starts is not None and quota.max_starts_per_user_hour is not None:
            starts = [self.c.epoch(t) or 0.0 for t in await self.starts.values()]
            allowed = quota.max_starts_per_user_hour
            if len(starts) >= allowed:  # room again once all but allowed - 1 of them have left the window
                raise QuotaExceeded("hourly", allowed, at=at, frees_at=starts[len(starts) - allowed] + quota.window_s)
        if self.in_channel is not None and quota.max_running_per_channel is not None:
            count = await self.in_channel.one()
            if count >= quota.max_running_per_channel:
                raise QuotaExceeded("channel", quota.max_running_per_channel, at=at, count=count)
        count = await self.running.one()
        if count >= quota.max_running:
            raise QuotaExceeded("global", quota.max_running, at=at, count=count)
        await self.spend.check()


async def count_room(c: Conn, quota: Quota, claim: Claim, at: float) -> Room:
    """Send every count `quota`'s limits need for `claim`, none waited for.

    A running debate holds its slot for whoever holds it (`held_by`: who started it, or who continued
    it last) since when (`held_since`), not for its requester since its creation; a start in the
    hourly window is a debate created or a continuation asked for."""
    live = "status = 'running' and held_since >= :live_since"
    args = {"live_since": c.time(at - quota.stale_after_s), "platform": claim.platform,
            "workspace": claim.workspace, "user": claim.user, "channel": claim.channel,
            "window_start": c.time(at - quota.window_s)}
    here = "platform = :platform and workspace is not distinct from :workspace"
    mine = starts = in_channel = None
    if quota.max_running_per_user is not None and claim.user is not None:
        mine = await c.send(f"select id from debates where {live} and {here} and held_by = :user"
                            " order by held_since, id", args)
    if quota.max_starts_per_user_hour is not None and claim.user is not None:
        starts = await c.send(
            f"select created_at from debates where {here} and requested_by = :user and created_at >= :window_start"
            " union all select c.at from continuations c join debates d on d.id = c.debate_id"
            " where d.platform = :platform and d.workspace is not distinct from :workspace"
            " and c.requested_by = :user and c.at >= :window_start order by 1", args)
    if quota.max_running_per_channel is not None and claim.channel is not None:
        in_channel = await c.send(f"select count(*) from debates where {live} and {here} and channel = :channel",
                                  args)
    running = await c.send(f"select count(*) from debates where {live}", args)
    return Room(c, quota, at, mine, starts, in_channel, running, await count_spend(c, quota, claim, at))


async def add_turn(c: Conn, turn: Turn) -> int:
    """Log one turn (ok, failed or empty) with its estimated cost; returns its row id. A write repeated
    after a restart, or a turn run again, updates its row (its id, and so its search entry, stays)."""
    row = {
        "debate_id": turn.debate_id, "round": turn.round, "seat": turn.seat, "role": turn.role, "kind": turn.kind,
        "model": turn.model, "text": turn.text, "started_at": c.time(turn.started_at),
        "duration_ms": turn.duration_ms, "input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens,
        "cost_usd": estimate_cost(turn.model, turn.input_tokens, turn.output_tokens), "status": turn.status,
        "error": turn.error, "tokens_estimated": turn.tokens_estimated or None,
    }
    await c.send_lock(turn.debate_id)
    same = "debate_id = :debate_id and round = :round and seat = :seat and kind is not distinct from :kind"
    sets = ", ".join(f'"{k}" = :{k}' for k in row)
    update = f"update turns set {sets} where id = (select id from turns where {same} order by id limit 1) returning id"
    columns, marks = ", ".join(f'"{c}"' for c in row), ", ".join(":" + c for c in row)
    insert = (f"insert into turns ({columns}) select {marks} where not exists (select 1 from turns where {same})"
              " returning id")
    if c.modifying_ctes:  # one statement, its snapshot taken after the lock: it updates the turn or inserts it
        written = await c.send(f"with updated as ({update}), inserted as ({insert})"
                               " select id from updated union all select id from inserted", row)
        await c.commit()
        return int(await written.one())
    # under the lock, the insert sees what the update did: one of the two writes the turn
    updated = await c.send(update, row)
    inserted = await c.send(insert, row)
    await c.commit()
    turn_id = await updated.one()
    return int(turn_id if turn_id is not None else await inserted.one())


async def add_notice(c: Conn, debate_id: str, level: str, text: str, at: float) -> None:
    """Log a notice once per level and text. Its check is the insert's own condition, sent after the lock,
    never inside the locking statement (whose snapshot predates its lock wait: dialect.py)."""
    row = {"debate_id": debate_id, "at": c.time(at), "level": level, "text": text}
    await c.send_lock(debate_id)
    # the same words at the same level are the same notice (a repeated write, after a restart)
    await c.send_insert("notices", row, unless="select 1 from notices where debate_id = :debate_id"
                                               " and level is not distinct from :level and text = :text")


async def set_verdict(c: Conn, debate_id: str, verdict: Verdict, at: float, number: int = 1) -> None:
    """Verdict `number` (1, then one per `continue`); a repeated write of that number replaces it in place
    (`on conflict do update`: its row, and so its search entry, stays)."""
    await c.send_debate_exists(debate_id)
    row = {"debate_id": debate_id, "number": number, "winner": verdict.clear_winner, "split": verdict.split,
           "reasoning": verdict.reasoning, "recommendation": verdict.recommendation, "consensus": verdict.consensus,
           "json": verdict.model_dump_json(), "at": c.time(at), **jury_columns(verdict),
           **calibration_columns(verdict)}
    sets = ", ".join(f"{k} = excluded.{k}" for k in row if k not in ("debate_id", "number"))
    await c.send_insert("verdicts", row, f"on conflict (debate_id, number) do update set {sets}")


async def finish_debate(c: Conn, debate_id: str, outcome: Outcome, at: float) -> None:
    """Record how the debate ended. Tokens and cost fall back to the sum over its turns."""
    status = await c.send_lock(debate_id)
    turns = await send_turn_tokens(c, debate_id)
    # a stop is final: a step of the stopped debate that was already running cannot undo it
    if await status.one() == "cancelled":
        return
    totals = await turns.totals()
    updates: dict[str, Any] = {
        "status": outcome.status, "finished_at": c.time(at), "rounds_completed": outcome.rounds_completed,
        "input_tokens": outcome.input_tokens or totals.input_tokens,
        "output_tokens": outcome.output_tokens or totals.output_tokens,
        "cost_usd": outcome.cost_usd if outcome.cost_usd is not None else totals.cost_usd,
        "warnings": json.dumps(list(outcome.warnings)), "error": outcome.error,
    }
    if outcome.rounds_planned:
        updates["rounds_planned"] = outcome.rounds_planned
    await c.update("debates", {"id": debate_id}, updates)


async def record_vote(c: Conn, vote: Vote, scope: Scope | None) -> Tally:
    """One vote per user and debate (voting again changes the choice); DebateNotFoundError outside `scope`."""
    visible, args = scope_sql(scope)
    if not await c.values(f"select 1 from debates d where d.id = :id and {visible}", args | {"id": vote.debate_id}):
        raise DebateNotFoundError(vote.debate_id)
    row = {"debate_id": vote.debate_id, "user": vote.user, "choice": vote.choice, "platform": vote.platform,
           "at": c.time(vote.at)}
    await c.insert("votes", row, 'on conflict (debate_id, "user") do update set choice = excluded.choice,'
                                 " platform = excluded.platform, at = excluded.at")
    return await tally(c, vote.debate_id)


async def set_message(c: Conn, debate_id: str, key: str, platform: str, channel: str | None, message_id: str,
                      final: bool) -> None:
    row = {"debate_id": debate_id, "key": key, "platform": platform, "channel": channel, "message_id": message_id,
           "final": final}
    await c.send_debate_exists(debate_id)  # a purged debate's late render records nothing
    # `final` only goes up for the same message (a repeated or late write never reopens it)
    await c.send_insert("messages", row, """
        on conflict (debate_id, key) do update set platform = excluded.platform, channel = excluded.channel,
            final = case when messages.message_id = excluded.message_id then (messages.final or excluded.final)
                    else excluded.final end,
            message_id = excluded.message_id""")


async def claim_request(c: Conn, key: str, at: float, keep_s: float) -> bool:
    """True the first time `key` is claimed; keys older than `keep_s` are forgotten."""
    await c.send("delete from request_keys where at < :before", {"before": c.time(at - keep_s)})
    claimed = await c.send_insert("request_keys", {"key": key, "at": c.time(at)}, "on conflict do nothing returning 1")
    await c.commit()
    return bool(await claimed.values())


# -- the start-up sweep of debates whose process ended before logging their end ----------------------


async def running_runners(c: Conn, prefix: str) -> list[str]:
    """The runners, named `prefix…`, that the log has running debates of."""
    like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return [str(r) for r in await c.values(
        "select distinct runner from debates where status = 'running' and runner like :like escape '\\'",
        {"like": like})]


async def fail_runner(c: Conn, runner: str, error: str, at: float) -> list[str]:
    """Every debate `runner` has running ends failed with `error` (tokens summed over its turns); their ids."""
    ids = [str(r) for r in await c.values("select id from debates where status = 'running' and runner = :runner",
                                          {"runner": runner})]
    for debate_id in ids:
        await finish_debate(c, debate_id, Outcome(status="failed", error=error), at)
    return ids


async def fail_unstarted(c: Conn, debate_id: str, error: str, at: float) -> bool:
    """End the debate failed with `error` when it is running and its start never reached its thread (no
    root message recorded: the front starting it stopped first); whether it did. The row is locked first, so
    a front that records the root meanwhile either sees the debate failed or keeps it."""
    status = await c.send_lock(debate_id)
    root = await c.send("select 1 from messages where debate_id = :id and key = 'root'", {"id": debate_id})
    if await status.one() != "running" or await root.values():
        return False
    await finish_debate(c, debate_id, Outcome(status="failed", error=error), at)
    return True
