"""How many debates may run, and how often one person may start one: the quota rules in one place.

Four limits, each one variable: `DEBATE_MAX_CONCURRENT` (debates running at once in the whole log, every process that
shares it; the only one the CLI, the operator on the host, is held to), `DEBATE_MAX_RUNNING_PER_USER` (one chat user's,
same platform and workspace), `DEBATE_MAX_RUNNING_PER_CHANNEL`, and `DEBATE_MAX_STARTS_PER_USER_HOUR` (rolling hour).

The log counts and reserves together: one write transaction counts and takes the slot only when every limit has
room, so concurrent requests, in one process or several, never both take the last slot. A start (`DebateLog.admit`)
and a `continue` (`DebateLog.begin_continuation`, for the person who asked) are admitted alike; a rematch is a new
debate. A refusal is a `QuotaExceeded`, whose `user_text()` names the limit, its variable and when it frees up, shown
to the requester alone with nothing posted. A slot is held by whoever holds it (`debates.held_by`: the starter or the
latest continuation's asker) since `held_since`; the hourly window counts debates created and continuations asked
for. A slot held longer than `STALE_AFTER_S` is free: a dead process must not lock everyone out for good.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.config import Settings

HOUR_S = 3600.0
# longer than any debate runs: 5 rounds of calls, each up to DEBATE_CALL_TIMEOUT with its retries, and the judge
STALE_AFTER_S = 6 * HOUR_S

Limit = Literal["user", "hourly", "channel", "global", "budget"]


class Budget(BaseModel):
    """The spend budgets in USD (orchestrator/budgets.py); None: that budget is not set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    per_workspace_day: float | None = Field(default=None, ge=0, allow_inf_nan=False)  # 0: no paid start
    per_user_day: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    per_month: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> Budget | None:
        """The budgets the operator set; None when none is."""
        budget = cls(per_workspace_day=settings.debate_budget_usd_per_workspace_day,
                     per_user_day=settings.debate_budget_usd_per_user_day,
                     per_month=settings.debate_budget_usd_per_month)
        return budget if budget != cls() else None


class Quota(BaseModel):
    """The limits one start is admitted under; None: that limit does not apply (the operator)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_running: int = Field(ge=1)
    max_running_per_user: int | None = Field(default=None, ge=1)
    max_running_per_channel: int | None = Field(default=None, ge=1)
    max_starts_per_user_hour: int | None = Field(default=None, ge=1)
    window_s: float = Field(default=HOUR_S, gt=0)
    stale_after_s: float = Field(default=STALE_AFTER_S, gt=0)
    budget: Budget | None = None  # None: spend is not limited (the operator, or no budget set)
    estimated_usd: float = Field(default=0.0, ge=0)  # what the start or continuation admitted may cost

    def for_cost(self, estimated_usd: float) -> Quota:
        """This quota for one admission estimated to cost `estimated_usd` (counted against the budgets)."""
        return self.model_copy(update={"estimated_usd": estimated_usd})

    @classmethod
    def from_settings(cls, settings: Settings) -> Quota:
        """What a chat user's start is held to: every limit."""
        return cls(
            max_running=settings.debate_max_concurrent,
            max_running_per_user=settings.debate_max_running_per_user,
            max_running_per_channel=settings.debate_max_running_per_channel,
            max_starts_per_user_hour=settings.debate_max_starts_per_user_hour,
            budget=Budget.from_settings(settings),
        )

    @classmethod
    def operator(cls, max_running: int) -> Quota:
        """What the operator on the host (the CLI) is held to: the global cap only."""
        return cls(max_running=max_running)


class Claim(BaseModel):
    """Who asks for a running slot, and where the debate runs: a start's requester and channel, or a
    continuation's asker (None: the operator) and its debate's channel."""

    model_config = ConfigDict(frozen=True)

    platform: str | None
    workspace: str | None
    user: str | None
    channel: str | None


class QuotaExceeded(Exception):
    """A start refused by one limit; nothing was logged or posted. `str()` is the text for the user."""

    def __init__(self, limit: Limit, allowed: int, *, at: float | None = None, frees_at: float | None = None,
                 running: tuple[str, ...] = (), count: int | None = None) -> None:
        self.limit = limit
        self.allowed = allowed
        # how many count toward the limit: more than `allowed` when it was lowered while they ran
        self.count = count if count is not None else max(allowed, len(running))
        self.at = at if at is not None else time.time()
        self.frees_at = frees_at  # the hourly limit: when the oldest start in the window leaves it
        self.running = running  # the user limit: the requester's own running debates, to stop one
        super().__init__(self.user_text())

    def user_text(self) -> str:
        n = self.allowed
        debates = f"{n} debate{'s' if n != 1 else ''}"
        held = f"{self.count} debate{'s' if self.count != 1 else ''}"
        over = self.count > n  # the limit was lowered while these ran
        if self.limit == "user":
            ids = ", ".join(f"`{d}`" for d in self.running)
            yours = f" ({ids})" if ids else ""
            if over:
                return (f"You already have {held} running{yours}; the most one person may run at once here is {n} "
                        "(DEBATE_MAX_RUNNING_PER_USER). You can start another once fewer than that run, or stop one.")
            return (f"You already have {debates} running{yours}, the most one person may run at once here "
                    "(DEBATE_MAX_RUNNING_PER_USER). You can start another as soon as one finishes, or stop one.")
        if self.limit == "hourly":
            return (f"You have started {debates} in the past hour, the most one person may start per hour here "
                    f"(DEBATE_MAX_STARTS_PER_USER_HOUR). {self.when_free()}")
        if self.limit == "channel":
            if over:
                return (f"This channel already has {held} running; the most one channel may run at once is {n} "
                        "(DEBATE_MAX_RUNNING_PER_CHANNEL). A new one can start here once fewer than that run.")
            return (f"This channel already has {debates} running, the most one channel may run at once "
                    "(DEBATE_MAX_RUNNING_PER_CHANNEL). A new one can start here as soon as one finishes.")
        if over:
            return (f"{held} are already running; the most this bot runs at once is {n} (DEBATE_MAX_CONCURRENT). "
                    "Try again once fewer than that run.")
        return (f"{debates} {'are' if n != 1 else 'is'} already running, the most this bot runs at once "
                "(DEBATE_MAX_CONCURRENT). Try again as soon as one finishes.")

    def when_free(self) -> str:
        if self.frees_at is None:
            return "You can start another as soon as an hour has passed since your oldest start."
        clock = datetime.fromtimestamp(self.frees_at, UTC).strftime("%H:%M")
        minutes = max(1, math.ceil((self.frees_at - self.at) / 60))
        return f"You can start another at {clock} UTC (in {minutes} minute{'s' if minutes != 1 else ''})."
