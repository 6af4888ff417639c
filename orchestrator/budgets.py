"""Spend budgets in US dollars: what a start may cost, what has been spent, and when a window resets.

Three budgets, each one variable, unset by default: `DEBATE_BUDGET_USD_PER_WORKSPACE_DAY` (a workspace's or guild's
spend per UTC day), `DEBATE_BUDGET_USD_PER_USER_DAY` (a chat user's per UTC day; a debate's calls count for whoever
holds it: its requester, or whoever asked for its latest continuation) and `DEBATE_BUDGET_USD_PER_MONTH` (the whole
deployment's per UTC calendar month).

Spend is what the log recorded for every model call in the window (`model_calls`: turns, judge passes, tie-breaks,
summaries), so every process sharing the log counts the same. A model with no known price counts at its vendor's
highest (`providers.pricing.highest_price`): an unpriced model must not be a way around a budget. Admission
(`check_room`, in the transaction that takes the running slot) refuses a start, a `continue` or a rematch whose
estimate (`estimate_usd`) would pass a budget, with a `BudgetExceeded` naming the variable, what is left and when the
window resets. A running debate is checked after each round and before a jury sits (`SpendWatch`): once a window is
spent, it stops after that round and gets its verdict (from one judge, never the jury), with a notice saying why.
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
JUDGE_PASSES = 2  # the judge (and each juror) reads the debate twice, the seats' order swapped
CHAIR_MAX_TOKENS = 2000  # a council chair's synthesis (orchestrator/debate/formats/council.py)


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
    tokens_estimated: bool = False  # not reported by the server: counted from the text (a failed call's)
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
    the round before; then the verdict (`verdict_usd`). A council is priced by its own stages
    (`council_usd`), whatever `rounds` says."""
    outputs = {seat.label: output_budget(seat.model.partition(":")[0], spec.effort) for seat in spec.seats}
    one_round = sum(outputs.values())
    if spec.format == "council":
        return council_usd(spec, outputs, answered=rounds is None)
    rounds = spec.rounds if rounds is None else rounds
    turns = sum(_call_usd(seat.model, PROMPT_TOKENS + one_round, outputs[seat.label]) for seat in spec.seats)
    return rounds * turns + verdict_usd(spec, rounds * one_round)


def verdict_usd(spec: DebateSpec, transcript_tokens: int) -> float:
    """The verdict over `transcript_tokens` of debate: every juror's passes (JUDGE_PASSES each) when a jury
    sits, else the judge's passes and, when a tie-break judge is named, its one pass."""
    passes = [(juror, JUDGE_PASSES) for juror in spec.judges] or [(spec.judge, JUDGE_PASSES)]
    if not spec.judges and spec.tiebreak_judge:
        passes.append((spec.tiebreak_judge, 1))
    return sum(n * _call_usd(model, PROMPT_TOKENS + transcript_tokens,
                             output_budget(model.partition(":")[0], spec.effort)) for model, n in passes)


def council_usd(spec: DebateSpec, outputs: dict[str, int], *, answered: bool = True) -> float:
    """A council: every member's answer (`answered`: a start; a `continue` ranks the answers it has), every
    member's ranking of all the answers, and the chair's synthesis from the answers and the rankings."""
    all_answers = sum(outputs.values())
    answers = sum(_call_usd(seat.model, PROMPT_TOKENS, outputs[seat.label]) for seat in spec.seats)
    rankings = sum(_call_usd(seat.model, PROMPT_TOKENS + all_answers, outputs[seat.label]) for seat in spec.seats)
    chair_out = max(CHAIR_MAX_TOKENS, output_budget(spec.judge.partition(":")[0], spec.effort))
    chair = _call_usd(spec.judge, PROMPT_TOKENS + 2 * all_answers, chair_out)
    return (answers if answered else 0.0) + rankings + chair


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
        # what is left of the month's budget would tell any chat user what the whole deployment spent
        left = (" more than is left" if self.window == "month" else
                f", and only {_money(self.left_usd)} is left")
        return (f"This debate could cost up to {_money(self.estimated_usd)},{left} "
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


def stop_reason(budget: Budget, claim: Claim, calls: Iterable[SpentCall], at: float, *, jury: int = 0,
                last: bool = False) -> str | None:
    """Why a running debate stops after the round it finished (a budget spent in its window), or None.
    `jury`: the size of the jury that would sit (it does not: one judge decides); `last`: the round was the
    last one planned (only a jury is then held back)."""
    recorded = list(calls)
    for window, allowed in limits(budget, claim):
        used = spent(window, recorded, claim, at)
        if used >= allowed:
            resets = _when(at, resets_at(window, at))
            # the month's is the whole deployment's: what it spent is the operator's to see, not a channel's
            amount = "" if window == "month" else f"{_money(used)} of "
            spent_text = f"{amount}the {_money(allowed)} {_WHAT[window]} ({VARIABLES[window]}) is spent"
            judged = f"one judge decides instead of the {jury}-judge jury" if jury else ""
            if last:
                return f"Budget reached: {spent_text}, so {judged}; the budget resets at {resets}."
            return (f"Stopped early: {spent_text}, so the debate ended after this round"
                    f"{' and ' + judged if judged else ''}; the budget resets at {resets}.")
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

    async def stop_reason(self, spec: DebateSpec, holder: str | None = None, *, last: bool = False) -> str | None:
        """`last`: asked after the last round, before a jury sits."""
        at = time.time()
        claim = Claim(platform=spec.platform, workspace=spec.workspace, user=holder or spec.requested_by,
                      channel=spec.channel)
        return stop_reason(self.budget, claim, await self.store.spent_calls(month_start(at)), at,
                           jury=len(spec.judges), last=last)


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
    tokens_estimated: bool = False
