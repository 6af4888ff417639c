"""What was spent, from the log: every model call's tokens and recorded cost, grouped one way.

`debate usage` (the operator: every call), `/debate usage` and `/debate-usage` (an admin: their
workspace against its budgets; anyone else: their own spend) and the App Home read the same calls
(`DebateLog.spent_calls`) and add them up here, so every view's numbers are the sum of the costs the
log recorded. A call whose model has no known price has no recorded cost: it is counted apart
(`unpriced_calls`), and `counted_usd` prices it at its vendor's highest, as the budgets do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from orchestrator.budgets import VARIABLES, SpentCall, Window, day_start, month_start, resets_at
from orchestrator.quotas import Budget, Claim

By = Literal["workspace", "user", "model", "day"]
BY: tuple[By, ...] = ("workspace", "user", "model", "day")
_SPAN = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_SECONDS = {"m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}


class UsageLine(BaseModel):
    """The calls of one group (or of all of them): how many, their tokens, what they cost."""

    model_config = ConfigDict(frozen=True)

    key: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0  # the sum of the costs recorded in the log
    unpriced_calls: int = 0  # calls whose model has no known price (no recorded cost)
    counted_usd: float = 0.0  # what the budgets count: the unpriced at their vendor's highest price
    estimated_calls: int = 0  # calls whose tokens the server did not report (counted from their text)


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    since: float
    by: By
    lines: tuple[UsageLine, ...]
    total: UsageLine


def parse_since(text: str, now: float, option: str = "--since") -> float:
    """`7d`, `24h`, `30m`, `2w`, or a date (`2026-03-01`, UTC): the start of the span, at or after
    1970-01-01 (the log holds nothing older, and the clock's arithmetic stops there). ValueError (one
    sentence naming `option`) otherwise, whatever the size of the number."""
    shown = text if len(text) <= 40 else text[:40] + "…"
    if found := _SPAN.match(text):
        digits = found.group(1).lstrip("0") or "0"
        # compared as whole numbers: a 400-digit span never becomes a float
        if len(digits) > 12 or int(digits) * _SECONDS[found.group(2)] > now:
            raise ValueError(f"{option} {shown.strip()} reaches back before 1970-01-01; give a shorter span "
                             "or a date such as 2026-03-01")
        return now - int(digits) * _SECONDS[found.group(2)]
    try:
        moment = datetime.fromisoformat(text.strip())
        start = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    except (ValueError, OverflowError):
        raise ValueError(f"{option} takes a span such as 7d, 24h or 30m, or a date such as 2026-03-01, "
                         f"not {shown!r}") from None
    if start < 0:
        raise ValueError(f"{option} {shown.strip()} is before 1970-01-01; give a later date")
    return start


def _key(by: By) -> Callable[[SpentCall], str]:
    if by == "model":
        return lambda c: c.model
    if by == "day":
        return lambda c: datetime.fromtimestamp(c.at, UTC).strftime("%Y-%m-%d")
    if by == "user":
        return lambda c: f"{c.platform or 'cli'}:{c.workspace or '-'}:{c.user or 'operator'}"
    return lambda c: f"{c.platform or 'cli'}:{c.workspace or '-'}"


def _line(key: str, calls: list[SpentCall]) -> UsageLine:
    return UsageLine(key=key, calls=sum(c.calls for c in calls), input_tokens=sum(c.input_tokens for c in calls),
                     output_tokens=sum(c.output_tokens for c in calls),
                     cost_usd=round(sum(c.cost_usd or 0.0 for c in calls), 9),
                     unpriced_calls=sum(c.calls for c in calls if c.cost_usd is None),
                     counted_usd=round(sum(c.counted_usd for c in calls), 9),
                     estimated_calls=sum(c.calls for c in calls if c.tokens_estimated))


def usage(calls: Iterable[SpentCall], since: float, by: By = "day") -> Usage:
    """The calls at or after `since`, grouped `by`, most expensive group first (days in order)."""
    kept = [c for c in calls if c.at >= since]
    key = _key(by)
    groups: dict[str, list[SpentCall]] = {}
    for call in kept:
        groups.setdefault(key(call), []).append(call)
    lines = [_line(k, v) for k, v in groups.items()]
    lines.sort(key=(lambda line: line.key) if by == "day" else (lambda line: (-line.counted_usd, line.key)))
    return Usage(since=since, by=by, lines=tuple(lines), total=_line("total", kept))


# ---- what chat shows: this day and month against the budgets


class Standing(BaseModel):
    """One window's spend against its budget (None: not set), for `/debate usage` and the App Home."""

    model_config = ConfigDict(frozen=True)

    window: Window
    spent_usd: float
    budget_usd: float | None
    resets_at: float

    @property
    def variable(self) -> str:
        return VARIABLES[self.window]


def standings(calls: Iterable[SpentCall], claim: Claim, budget: Budget | None, at: float, *,
              admin: bool) -> list[Standing]:
    """An admin's: the workspace this day and this month, and (when the deployment has a month budget) the
    workspace's own share of it; anyone else's: their own spend this day and month. Each against the budget
    that applies, if set. Never what other workspaces spent: a workspace's admin is not the operator."""
    kept = list(calls)
    mine = [c for c in kept if c.platform == claim.platform and c.workspace == claim.workspace
            and (admin or c.user == claim.user)]
    today = sum(c.counted_usd for c in mine if c.at >= day_start(at))
    month = sum(c.counted_usd for c in mine if c.at >= month_start(at))
    set_ = budget or Budget()
    day_window: Window = "workspace_day" if admin else "user_day"
    found = [Standing(window=day_window, spent_usd=today, resets_at=resets_at(day_window, at),
                      budget_usd=set_.per_workspace_day if admin else set_.per_user_day),
             Standing(window="month", spent_usd=month, resets_at=resets_at("month", at), budget_usd=None)]
    if admin and set_.per_month is not None:  # the deployment's budget: this workspace's share of it, no more
        found.append(Standing(window="month", spent_usd=month, resets_at=resets_at("month", at),
                              budget_usd=set_.per_month))
    return found


def standing_lines(found: list[Standing], *, admin: bool, place: str = "workspace") -> list[str]:
    """The standings in words, one line each (markdown-free: each platform formats its own); `place`: what
    the platform calls a workspace (Discord: server)."""
    whose = f"This {place}" if admin else "You"
    lines = []
    for n, s in enumerate(found):
        span = "today" if s.window != "month" else "this month"
        resets = datetime.fromtimestamp(s.resets_at, UTC).strftime('%Y-%m-%d %H:%M')
        if n == 2 and s.budget_usd is not None:  # the whole bot's budget: what is left of it is not theirs to see
            share = s.spent_usd / s.budget_usd if s.budget_usd else 0.0
            lines.append(f"{whose}'s share of the bot's monthly budget: ${s.spent_usd:,.4f} of ${s.budget_usd:,.2f} "
                         f"({share:.1%}; {s.variable}, shared with every workspace; resets {resets} UTC)")
            continue
        against = (f" of ${s.budget_usd:,.2f} ({s.variable}; ${max(0.0, s.budget_usd - s.spent_usd):,.2f} left, "
                   f"resets {resets} UTC)" if s.budget_usd is not None else "" if n == 1 else " (no budget set)")
        lines.append(f"{whose} spent ${s.spent_usd:,.4f} {span}{against}")
    return lines
