"""What the budgets and `debate usage` read and write in the log, written once for both databases: every
model call since a time with whom it counts for, a call that is not a debater's turn, and the budget check
admission runs under its lock (writes.py `check_room`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.budgets import CallUsage, Reserved, SpentCall, check_budget, day_start, month_start, outstanding
from orchestrator.log.dialect import Conn, Sent
from orchestrator.providers.pricing import estimate_cost
from orchestrator.quotas import Claim, Quota

# who a call counts for: whoever asked for the debate's latest continuation begun before it, else its requester
_HOLDER = ("coalesce((select c.requested_by from continuations c where c.debate_id = d.id and c.at <= {at}"
           " order by c.at desc limit 1), d.requested_by)")
# the model calls of the debates `{where}` picks (`d`): the debaters' turns, then the other calls (`model_calls`)
_CALLS_SQL = (
    "select d.id as debate_id, t.started_at as at, d.platform, d.workspace, " + _HOLDER.format(at="t.started_at")
    + " as holder, t.model, t.input_tokens, t.output_tokens, t.cost_usd, t.tokens_estimated, 1 as calls"
    " from turns t join debates d on d.id = t.debate_id where {turns}"
    " union all select d.id, m.at, d.platform, d.workspace, " + _HOLDER.format(at="m.at")
    + " , m.model, m.input_tokens, m.output_tokens, m.cost_usd, m.tokens_estimated, 1"
    " from model_calls m join debates d on d.id = m.debate_id where {calls}"
)
# every model call since `since`, and the purged debates' days of calls (`usage_days`) since then
_SPENT_SQL = (_CALLS_SQL.format(turns="t.started_at >= :since", calls="m.at >= :since")
              + " union all select '', u.day, u.platform, u.workspace, u.holder, u.model, u.input_tokens,"
                " u.output_tokens, u.cost_usd, u.tokens_estimated, u.calls from usage_days u where u.day >= :since")
_DEBATE_CALLS_SQL = _CALLS_SQL.format(turns="d.id = :id and t.started_at is not null", calls="d.id = :id")
# the running debates admission reserved money for (their estimates), and since when they hold it
_RESERVED_SQL = ("select id as debate_id, platform, workspace, held_by as holder, held_since, reserved_usd as usd"
                 " from debates where status = 'running' and reserved_usd is not null and held_since >= :live_since")


def _spent_call(c: Conn, row: dict[str, Any]) -> SpentCall:
    return SpentCall.model_validate(row | {"user": row["holder"], "at": c.epoch(row["at"]) or 0.0,
                                           "model": row["model"] or "", "input_tokens": row["input_tokens"] or 0,
                                           "output_tokens": row["output_tokens"] or 0,
                                           "tokens_estimated": bool(row["tokens_estimated"])})


async def spent_calls(c: Conn, since: float) -> list[SpentCall]:
    return [_spent_call(c, r) for r in await c.rows(_SPENT_SQL, {"since": c.time(since)})]


def reservation(quota: Quota) -> float | None:
    """What an admission under `quota` reserves on its debate's row (None: no budget is set)."""
    return quota.estimated_usd if quota.budget is not None else None


@dataclass
class Spend:
    """What a budget check reads, sent (`count_spend`; nothing when no budget is set)."""

    c: Conn
    quota: Quota
    claim: Claim
    at: float
    calls: Sent | None = None
    reserved: Sent | None = None

    async def check(self) -> None:
        """Raise BudgetExceeded when the spend recorded in a budget's window, what running debates still hold
        reserved, and this admission's estimate would pass it (the caller holds the admission lock)."""
        if self.quota.budget is None or self.calls is None or self.reserved is None:
            return
        calls = [_spent_call(self.c, r) for r in await self.calls.rows()]
        reserved = [Reserved.model_validate(r | {"user": r["holder"], "since": self.c.epoch(r["held_since"])})
                    for r in await self.reserved.rows()]
        held = outstanding(reserved, calls, self.at)
        check_budget(self.quota.budget, self.claim, self.quota.estimated_usd, calls + held, self.at)


async def count_spend(c: Conn, quota: Quota, claim: Claim, at: float) -> Spend:
    spend = Spend(c, quota, claim, at)
    if quota.budget is not None:
        spend.calls = await c.send(_SPENT_SQL, {"since": c.time(month_start(at))})  # every window starts this month
        spend.reserved = await c.send(_RESERVED_SQL, {"live_since": c.time(at - quota.stale_after_s)})
    return spend


async def add_call(c: Conn, call: CallUsage) -> None:
    """A model call that is not a debater's turn, with its estimated cost; `attempt` keys it, so a write
    repeated is one row."""
    await c.send_debate_exists(call.debate_id)
    await c.send_insert("model_calls", call.model_dump() | {
        "at": c.time(call.at), "cost_usd": estimate_cost(call.model, call.input_tokens, call.output_tokens),
        "tokens_estimated": call.tokens_estimated or None,
    }, "on conflict (attempt) do nothing")


async def keep_usage(c: Conn, debate_id: str) -> None:
    """Before a debate is purged: its calls added to `usage_days` as sums per UTC day, workspace, holder, model,
    whether they were priced and whether their tokens were estimated, so the budgets and `debate usage` count the
    same money and tokens after."""
    days: dict[tuple[Any, ...], list[SpentCall]] = {}
    for row in await c.rows(_DEBATE_CALLS_SQL, {"id": debate_id}):
        call = _spent_call(c, row)
        key = (day_start(call.at), call.platform, call.workspace, call.user, call.model, call.cost_usd is None,
               call.tokens_estimated)
        days.setdefault(key, []).append(call)
    await c.send_insert_rows("usage_days", [
        {"day": c.time(day), "platform": platform, "workspace": workspace, "holder": holder, "model": model,
         "calls": len(calls), "input_tokens": sum(x.input_tokens for x in calls),
         "output_tokens": sum(x.output_tokens for x in calls),
         "cost_usd": None if unpriced else sum(x.cost_usd or 0.0 for x in calls),
         "tokens_estimated": estimated or None}
        for (day, platform, workspace, holder, model, unpriced, estimated), calls in days.items()])
