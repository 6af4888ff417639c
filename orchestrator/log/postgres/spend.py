"""What the budgets and `debate usage` read and write in the Postgres log: ../spend.py's query and
writes in this dialect; admission's budget check runs under the admission lock (writes.py `check_room`)."""

from __future__ import annotations

from orchestrator.budgets import CallUsage, Reserved, SpentCall, check_budget, month_start, outstanding
from orchestrator.log.postgres.reads import Conn, from_time, lock_debate, rows, to_time
from orchestrator.log.spend import RESERVED_SQL, SPENT_SQL, reservation, spent_call, usage_row
from orchestrator.quotas import Claim, Quota


async def spent_calls(conn: Conn, since: float) -> list[SpentCall]:
    found = await rows(conn, SPENT_SQL.format(since="%(since)s"), {"since": to_time(since)})
    return [spent_call(r, from_time(r["at"])) for r in found]


async def reserved_rows(conn: Conn, live_since: float) -> list[Reserved]:
    found = await rows(conn, RESERVED_SQL.format(live_since="%(live_since)s"), {"live_since": to_time(live_since)})
    return [Reserved.model_validate(r | {"user": r["holder"], "since": from_time(r["held_since"])}) for r in found]


async def reserve(conn: Conn, debate_id: str, quota: Quota) -> None:
    """As ../spend.py `reserve`."""
    await conn.execute("update debates set reserved_usd = %s where id = %s", [reservation(quota), debate_id])


async def check_spend(conn: Conn, quota: Quota, claim: Claim, at: float) -> None:
    """As ../spend.py `check_spend`; the caller holds the admission lock."""
    if quota.budget is not None:
        calls = await spent_calls(conn, month_start(at))
        held = outstanding(await reserved_rows(conn, at - quota.stale_after_s), calls, at)
        check_budget(quota.budget, claim, quota.estimated_usd, calls + held, at)


async def add_call(conn: Conn, call: CallUsage) -> None:
    await lock_debate(conn, call.debate_id)
    await conn.execute("insert into model_calls (attempt, debate_id, at, purpose, model, input_tokens, output_tokens,"
                       " cost_usd) values (%(attempt)s, %(debate_id)s, %(at)s, %(purpose)s, %(model)s,"
                       " %(input_tokens)s, %(output_tokens)s, %(cost_usd)s) on conflict (attempt) do nothing",
                       usage_row(call) | {"at": to_time(call.at)})
