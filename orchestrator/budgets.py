"""Spend budgets in US dollars: what a start may cost, what has been spent, and when a window resets.

Three budgets, each set by one variable and unset by default:

- `DEBATE_BUDGET_USD_PER_WORKSPACE_DAY`: what one workspace (or guild) may spend per UTC day.
- `DEBATE_BUDGET_USD_PER_USER_DAY`: what one chat user may spend per UTC day (the calls of a debate
  count for whoever holds it: its requester, or whoever asked for its latest continuation).
- `DEBATE_BUDGET_USD_PER_MONTH`: what the whole deployment may spend per UTC calendar month.

Spend is what the log recorded for every model call in the window (debaters' turns, and the judge
passes, tie-breaks and summaries in `model_calls`), so every process sharing the log counts the same.
A call whose model has no known price counts at its vendor's highest known price
(`providers.pricing.highest_price`): an unpriced model must not be a way around a budget.

Admission (`check_room` in the log, in the transaction that takes the running slot) refuses a start, a
`continue` or a rematch whose estimated cost (`estimate_usd`) would take a window past its budget, with
a `BudgetExceeded` naming the variable, what is left and when the window resets. A running debate is
checked after each round (`SpendWatch`): once its windows are spent, it stops after that round and
gets its verdict, with a notice saying why.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from orchestrator.models import DebateSpec
from orchestrator.providers.pricing import budget_price, counted_cost
from orchestrator.providers.registry import budget as output_budget
from orchestrator.quotas import Budget, Claim, QuotaExceeded

Window = Literal["workspace_day", "user_day", "month"]
VARIABLES: dict[Window, str] = {
    "workspace_day": "DEBATE_BUDGET_USD_PER_WORKSPACE_DAY",
    "user_day": "DEBATE_BUDGET_USD_PER_USER_DAY",
    "month": "DEBATE_BUDGET_USD_PER_MONTH",
}
_WHAT: dict[Window, str] = {
    "workspace_day": "this workspace may spend per day",
    "user_day": "one person may spend per day",
    "month": "this bot may spend per month",
}
PROMPT_TOKENS = 1500  # a call's instructions and topic, before any debate text
JUDGE_PASSES = 2  # the judge reads the debate twice, the seats' order swapped


class SpentCall(BaseModel):
    """One model call as the log recorded it, with whom it counts for."""

    model_config = ConfigDict(frozen=True)

    debate_id: str
    at: float
    platform: str | None = None
    workspace: str | None = None
    user: str | None = None  # who held the debate when the call ran
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None: the model's price is unknown
    calls: int = 1  # more than one: a purged debates' day of calls, kept as one sum (orchestrator/log/purge.py)

    @property
    def counted_usd(self) -> float:
        return counted_cost(self.model, self.input_tokens, self.output_tokens, self.cost_usd)


class Reserved(BaseModel):
    """A running debate's reservation: what admission estimated it may cost, since when it holds it."""

    model_config = ConfigDict(frozen=True)

    debate_id: str
    platform: str | None = None
    workspace: str | None = None
    user: str | None = None
    since: float
    usd: float


def outstanding(running: Iterable[Reserved], calls: Sequence[SpentCall], at: float) -> list[SpentCall]:
    """Each running debate's reservation less what it has spent since, as spend counted now: two starts
    admitted at once, in any process, cannot both count on the same money."""
    left = []
    for held in running:
        used = sum(c.counted_usd for c in calls if c.debate_id == held.debate_id and c.at >= held.since)
        if held.usd > used:
            left.append(SpentCall(debate_id=held.debate_id, at=at, platform=held.platform, workspace=held.workspace,
                                  user=held.user, model="", cost_usd=held.usd - used))
    return left


# ---- windows (UTC days and calendar months)


def day_start(at: float) -> float:
    moment = datetime.fromtimestamp(at, UTC)
    return moment.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def month_start(at: float) -> float:
    moment = datetime.fromtimestamp(at, UTC)
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


def resets_at(window: Window, at: float) -> float:
    if window != "month":
        return (datetime.fromtimestamp(day_start(at), UTC) + timedelta(days=1)).timestamp()
    first = datetime.fromtimestamp(month_start(at), UTC)
    return first.replace(year=first.year + first.month // 12, month=first.month % 12 + 1).timestamp()


def window_start(window: Window, at: float) -> float:
    return month_start(at) if window == "month" else day_start(at)


def counts_for(window: Window, call: SpentCall, claim: Claim) -> bool:
    """Whether `call` is in `claim`'s share of `window` (its workspace, its user, or everyone)."""
    if window == "month":
        return True
    here = call.platform == claim.platform and call.workspace == claim.workspace
    return here and (window == "workspace_day" or call.user == claim.user)


def limits(budget: Budget, claim: Claim) -> list[tuple[Window, float]]:
    """The budgets set that apply to `claim` (a user budget needs a user: the operator has none)."""
    found: list[tuple[Window, float | None]] = [
        ("workspace_day", budget.per_workspace_day if claim.platform not in (None, "cli") else None),
        ("user_day", budget.per_user_day if claim.user is not None else None),
        ("month", budget.per_month),
    ]
    return [(window, allowed) for window, allowed in found if allowed is not None]


def spent(window: Window, calls: Iterable[SpentCall], claim: Claim, at: float) -> float:
    start = window_start(window, at)
    return sum(c.counted_usd for c in calls if c.at >= start and counts_for(window, c, claim))


# ---- estimates


def _call_usd(model: str, input_tokens: int, output_tokens: int) -> float:
    price = budget_price(model)
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1_000_000


def estimate_usd(spec: DebateSpec, rounds: int | None = None) -> float:
    """What `rounds` (default: the spec's) more rounds of `spec` and its verdict may cost at most: each
    round every seat writes its effort's output budget at its model's price, reading the instructions and
    the round before; the judge reads every round, twice."""
    rounds = spec.rounds if rounds is None else rounds
    outputs = {seat.label: output_budget(seat.model.partition(":")[0], spec.effort) for seat in spec.seats}
    one_round = sum(outputs.values())
    turns = sum(_call_usd(seat.model, PROMPT_TOKENS + one_round, outputs[seat.label]) for seat in spec.seats)
    judge_out = output_budget(spec.judge.partition(":")[0], spec.effort)
    judged = JUDGE_PASSES * _call_usd(spec.judge, PROMPT_TOKENS + rounds * one_round, judge_out)
    return rounds * turns + judged


# ---- refusals


def _money(usd: float) -> str:
    return f"${usd:,.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"


def _when(at: float, then: float) -> str:
    clock = datetime.fromtimestamp(then, UTC).strftime("%Y-%m-%d %H:%M")
    minutes = max(1, math.ceil((then - at) / 60))
    hours, mins = divmod(minutes, 60)
    wait = f"{hours} h {mins} min" if hours else f"{mins} min"
    return f"{clock} UTC (in {wait})"


class BudgetExceeded(QuotaExceeded):
    """A start or continuation refused by a spend budget; nothing was logged or posted."""

    def __init__(self, window: Window, allowed_usd: float, spent_usd: float, estimated_usd: float, at: float) -> None:
        self.window = window
        self.variable = VARIABLES[window]
        self.allowed_usd = allowed_usd
        self.spent_usd = spent_usd
        self.left_usd = max(0.0, allowed_usd - spent_usd)
        self.estimated_usd = estimated_usd
        self.resets_at = resets_at(window, at)
        super().__init__("budget", 0, at=at, frees_at=self.resets_at)

    def user_text(self) -> str:
        return (f"This debate could cost up to {_money(self.estimated_usd)}, and only {_money(self.left_usd)} is left "
                f"of the {_money(self.allowed_usd)} {_WHAT[self.window]} ({self.variable}). The budget resets at "
                f"{_when(self.at, self.resets_at)}; try fewer rounds, a lower effort or cheaper models before then.")


def check_budget(budget: Budget | None, claim: Claim, estimated_usd: float, calls: Iterable[SpentCall],
                 at: float) -> None:
    """Raise BudgetExceeded for the first budget that the spend in its window plus `estimated_usd` would pass."""
    if budget is None:
        return
    recorded = list(calls)
    for window, allowed in limits(budget, claim):
        used = spent(window, recorded, claim, at)
        if used + estimated_usd > allowed:
            raise BudgetExceeded(window, allowed, used, estimated_usd, at)


def stop_reason(budget: Budget, claim: Claim, calls: Iterable[SpentCall], at: float) -> str | None:
    """Why a running debate stops after the round it finished (a budget spent in its window), or None."""
    recorded = list(calls)
    for window, allowed in limits(budget, claim):
        used = spent(window, recorded, claim, at)
        if used >= allowed:
            resets = _when(at, resets_at(window, at))
            return (f"Stopped early: {_money(used)} of the {_money(allowed)} {_WHAT[window]} ({VARIABLES[window]}) "
                    f"is spent, so the debate ended after this round; the budget resets at {resets}.")
    return None


class SpentCalls(Protocol):
    async def spent_calls(self, since: float) -> list[SpentCall]: ...


def spend_watch(store: SpentCalls, budget: Budget | None) -> SpendWatch | None:
    """What a running debate is checked by after each round; None when no budget is set."""
    return SpendWatch(store, budget) if budget is not None else None


class SpendWatch:
    """Asked after each round of a running debate: has a budget of its windows been spent?"""

    def __init__(self, store: SpentCalls, budget: Budget) -> None:
        self.store = store
        self.budget = budget

    def __repr__(self) -> str:
        return "SpendWatch()"

    async def stop_reason(self, spec: DebateSpec, holder: str | None = None) -> str | None:
        at = time.time()
        claim = Claim(platform=spec.platform, workspace=spec.workspace, user=holder or spec.requested_by,
                      channel=spec.channel)
        return stop_reason(self.budget, claim, await self.store.spent_calls(month_start(at)), at)


class CallUsage(BaseModel):
    """One model call that is not a debater's turn, as the log records it (`model_calls`)."""

    model_config = ConfigDict(frozen=True)

    attempt: str  # drawn where the call ran: a repeated write of it is one row
    debate_id: str
    at: float
    purpose: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
