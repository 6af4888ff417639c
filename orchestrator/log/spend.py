"""What the budgets and `debate usage` read and write in the SQLite log (Postgres: postgres/spend.py, the
same query in its dialect): every model call since a time with whom it counts for, a call that is not a
debater's turn, and the budget check admission runs inside its transaction (writes.py `check_room`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlite_utils import Database

from orchestrator.budgets import CallUsage, Reserved, SpentCall, check_budget, month_start, outstanding
from orchestrator.log.reads import dict_rows, require_debate
from orchestrator.log.records import from_iso, to_iso
from orchestrator.providers.pricing import estimate_cost
from orchestrator.quotas import Claim, Quota

# who a call counts for: whoever asked for the debate's latest continuation begun before it, else its requester
_HOLDER = ("coalesce((select c.requested_by from continuations c where c.debate_id = d.id and c.at <= {at}"
           " order by c.at desc limit 1), d.requested_by)")
# every model call since `since`: the debaters' turns, then the other calls (`model_calls`)
SPENT_SQL = (
    "select d.id as debate_id, t.started_at as at, d.platform, d.workspace, " + _HOLDER.format(at="t.started_at")
    + " as holder, t.model, t.input_tokens, t.output_tokens, t.cost_usd"
    " from turns t join debates d on d.id = t.debate_id where t.started_at >= {since}"
    " union all select d.id, m.at, d.platform, d.workspace, " + _HOLDER.format(at="m.at")
    + " , m.model, m.input_tokens, m.output_tokens, m.cost_usd"
    " from model_calls m join debates d on d.id = m.debate_id where m.at >= {since}"
)


def spent_call(row: dict[str, Any], at: float | None) -> SpentCall:
    """A row of SPENT_SQL (`at`: its time, read in the row's dialect)."""
    return SpentCall.model_validate(row | {"user": row["holder"], "at": at or 0.0, "model": row["model"] or "",
                                           "input_tokens": row["input_tokens"] or 0,
                                           "output_tokens": row["output_tokens"] or 0})


def spent_rows(db: Database, since: float) -> list[SpentCall]:
    found = dict_rows(db, SPENT_SQL.format(since=":since"), {"since": to_iso(since)})
    return [spent_call(r, from_iso(r["at"])) for r in found]


# the running debates admission reserved money for (their estimates), and since when they hold it
RESERVED_SQL = ("select id as debate_id, platform, workspace, held_by as holder, held_since, reserved_usd as usd"
                " from debates where status = 'running' and reserved_usd is not null and held_since >= {live_since}")


def reserved_rows(db: Database, live_since: float) -> list[Reserved]:
    found = dict_rows(db, RESERVED_SQL.format(live_since=":live_since"), {"live_since": to_iso(live_since)})
    return [Reserved.model_validate(r | {"user": r["holder"], "since": from_iso(r["held_since"])}) for r in found]


def reservation(quota: Quota) -> float | None:
    """What an admission under `quota` reserves on its debate's row (None: no budget is set)."""
    return quota.estimated_usd if quota.budget is not None else None


def reserve(db: Database, debate_id: str, quota: Quota) -> None:
    """A continuation admitted under `quota` reserves its estimate from now (its `held_since`)."""
    db.execute("update debates set reserved_usd = ? where id = ?", [reservation(quota), debate_id])


def spent_calls(since: float) -> Callable[[Database], list[SpentCall]]:
    return lambda db: spent_rows(db, since)


def check_spend(db: Database, quota: Quota, claim: Claim, at: float) -> None:
    """Raise BudgetExceeded when the spend recorded in a budget's window plus this admission's estimate
    would pass it (the caller's IMMEDIATE transaction holds the database: no other admission counts between)."""
    if quota.budget is not None:
        calls = spent_rows(db, month_start(at))  # every window starts in this month
        held = outstanding(reserved_rows(db, at - quota.stale_after_s), calls, at)
        check_budget(quota.budget, claim, quota.estimated_usd, calls + held, at)


def usage_row(call: CallUsage) -> dict[str, object]:
    return call.model_dump() | {"cost_usd": estimate_cost(call.model, call.input_tokens, call.output_tokens)}


def add_call(call: CallUsage) -> Callable[[Database], None]:
    row = usage_row(call) | {"at": to_iso(call.at)}

    def fn(db: Database) -> None:
        require_debate(db, call.debate_id)
        db.execute("insert or ignore into model_calls (attempt, debate_id, at, purpose, model, input_tokens,"
                   " output_tokens, cost_usd) values (:attempt, :debate_id, :at, :purpose, :model, :input_tokens,"
                   " :output_tokens, :cost_usd)", row)

    return fn
