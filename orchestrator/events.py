"""What the engine emits while a debate runs, the Sink protocol that consumes it, and the bus.

Every event has a deterministic `key` ("started", "round:2:start", "turn:1:A:opening:end", "notice:<hash>",
"verdict", "final"), the same in any run, so a reader of an at-least-once stream drops a key it has seen. Text deltas
share their turn's key and add `attempt` (one id per run of the model call: a new one restarts the turn's text) and
`offset` (characters of that attempt before the delta). A turn a format plays again with the same round, seat and
kind is a new `take` (keys ending in `:t{take}`), so it still shows; the log keeps the latest take.

Store first, enforced here: the bus hands each event to the log sink, and only once that write has returned to the
platform sinks, in order. When the log write fails the event goes no further, the debate stops, and the platforms
get one DebateFailed (LOG_WRITE_FAILED); the log gets it too, retried with a growing pause until accepted
(`EventBus.record_failure`), so a log unwritable for a while never leaves the debate "running" and holding its quota
slot. Platform sinks must return quickly: they buffer text deltas and flush them from their own tasks.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.metrics import LOG_WRITE_FAILURES
from orchestrator.models import DebateSpec, EvidenceCheck, Interjection, Outcome, Turn, Verdict, evidence_summary, now

log = logging.getLogger(__name__)


class EventBase(BaseModel):
    model_config = ConfigDict(frozen=True)

    debate_id: str
    at: float = Field(default_factory=now)

    @property
    def key(self) -> str:
        """This event's identity within its debate (see the module docstring); every event type names its own."""
        return type(self).__name__


# The keys the events below are named by. A platform's message keys are made from them
# (bots/thread/keys.py: an event's key and the part number), so they change only together with the
# `messages` rows a resumed thread looks its messages up by.


def turn_key(round_: int, seat: str, kind: str, take: int = 0) -> str:
    """A turn's key (its text deltas'); its start and end add `:start` and `:end`."""
    return f"turn:{round_}:{seat}:{kind}" + (f":t{take}" if take else "")


def round_key(round_: int) -> str:
    """A round's key; its start and end add `:start` and `:end`."""
    return f"round:{round_}"


def notice_key(level: str, text: str) -> str:
    """A notice's key: the same words at the same level are the same notice."""
    return "notice:" + hashlib.sha1((level + text).encode(), usedforsecurity=False).hexdigest()[:12]


def interjection_key(note_id: str) -> str:
    """The key of an audience note (or a continuation's facts) reaching the prompts."""
    return f"interjection:{note_id}"


def verdict_key(number: int = 1) -> str:
    """The verdict of segment `number`: the first is "verdict", a continuation's "verdict:N"."""
    return "verdict" if number <= 1 else f"verdict:{number}"


class DebateStarted(EventBase):
    type: Literal["debate_started"] = "debate_started"
    spec: DebateSpec

    @property
    def key(self) -> str:
        return "started"


class RoundStarted(EventBase):
    type: Literal["round_started"] = "round_started"
    round: int
    total: int
    title: str = ""  # e.g. "Openings", "Rebuttals"

    @property
    def key(self) -> str:
        return f"{round_key(self.round)}:start"


class TurnStarted(EventBase):
    type: Literal["turn_started"] = "turn_started"
    round: int
    seat: str
    role: str
    kind: str
    model: str
    take: int = 0  # the turn played again (same round, seat, kind): 1, 2, …

    @property
    def key(self) -> str:
        return f"{turn_key(self.round, self.seat, self.kind, self.take)}:start"


class TextDelta(EventBase):
    type: Literal["text_delta"] = "text_delta"
    round: int
    seat: str
    kind: str
    delta: str
    attempt: str = ""  # one id per run of the model call
    offset: int = 0  # characters of this attempt sent before this delta
    take: int = 0

    @property
    def key(self) -> str:
        """The turn's key: deltas are told apart by (`attempt`, `offset`)."""
        return turn_key(self.round, self.seat, self.kind, self.take)


class TurnCompleted(EventBase):
    type: Literal["turn_completed"] = "turn_completed"
    turn: Turn
    take: int = 0

    @property
    def key(self) -> str:
        return f"{turn_key(self.turn.round, self.turn.seat, self.turn.kind, self.take)}:end"


class EvidenceChecked(EventBase):
    """What checking one turn's citations found (orchestrator/evidence/): shown under the turn as one line."""

    type: Literal["evidence_checked"] = "evidence_checked"
    round: int
    seat: str
    kind: str
    take: int = 0
    checks: tuple[EvidenceCheck, ...] = ()

    @property
    def key(self) -> str:
        return f"{turn_key(self.round, self.seat, self.kind, self.take)}:evidence"

    @property
    def summary(self) -> str:
        """`Evidence: 3 cited · 2 verified · 1 not found`: counts only, no quoted text (nothing to ping)."""
        return evidence_summary(self.checks)

    def line_after(self, last_turn: tuple[int, str, str] | None) -> str:
        """The summary as shown below `last_turn` (round, seat, kind: the turn shown last), naming its own turn
        when that is another (checks run beside the next turn, and reading a page can outlast its start)."""
        if last_turn in (None, (self.round, self.seat, self.kind)):
            return self.summary
        return f"{self.summary} (seat {self.seat}, round {self.round})"


class TurnFailed(EventBase):
    type: Literal["turn_failed"] = "turn_failed"
    turn: Turn
    take: int = 0

    @property
    def key(self) -> str:
        return f"{turn_key(self.turn.round, self.turn.seat, self.turn.kind, self.take)}:end"


class RoundCompleted(EventBase):
    type: Literal["round_completed"] = "round_completed"
    round: int
    total: int

    @property
    def key(self) -> str:
        return f"{round_key(self.round)}:end"


class Notice(EventBase):
    """Something users should see that is not a turn: warnings, the distilled question, stances."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "warning"] = "info"
    text: str
    # a caveat the verdict itself states (its confidence or the judge's family): a thread shows it inside
    # the verdict message, not as a message of its own queued ahead of the verdict
    with_verdict: bool = False

    @property
    def key(self) -> str:
        return notice_key(self.level, self.text)


class VerdictReached(EventBase):
    type: Literal["verdict"] = "verdict"
    verdict: Verdict
    number: int = 1  # 2, 3, …: the verdict of a continuation (the log keeps every one)

    @property
    def key(self) -> str:
        return verdict_key(self.number)


class CallRecorded(EventBase):
    """A model call that is not a debater's turn (a judge pass, a summary), for the log alone: what it
    cost counts toward the budgets and `debate usage`. `attempt` is drawn where the call ran."""

    type: Literal["call_recorded"] = "call_recorded"
    attempt: str
    purpose: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False  # not reported by the server (a call that failed after streaming, …)

    @property
    def key(self) -> str:
        return f"call:{self.attempt}"


class Interjected(EventBase):
    """An audience note (or a continuation's new facts) reached the prompts of `interjection.round`."""

    type: Literal["interjected"] = "interjected"
    interjection: Interjection

    @property
    def key(self) -> str:
        return interjection_key(self.interjection.id)


class DebateContinued(EventBase):
    """A finished debate goes on (`continue`): segment 2, 3, … runs one more round, `round`, and a new verdict."""

    type: Literal["debate_continued"] = "debate_continued"
    segment: int
    round: int

    @property
    def key(self) -> str:
        return f"continued:{self.segment}"


class DebateFinished(EventBase):
    type: Literal["debate_finished"] = "debate_finished"
    outcome: Outcome

    @property
    def key(self) -> str:
        return "final"


class DebateFailed(EventBase):
    type: Literal["debate_failed"] = "debate_failed"
    outcome: Outcome

    @property
    def key(self) -> str:
        return "final"


class DebateCancelled(EventBase):
    type: Literal["debate_cancelled"] = "debate_cancelled"
    outcome: Outcome

    @property
    def key(self) -> str:
        return "final"


Event = Annotated[
    DebateStarted
    | RoundStarted
    | TurnStarted
    | TextDelta
    | TurnCompleted
    | EvidenceChecked
    | TurnFailed
    | RoundCompleted
    | Notice
    | Interjected
    | DebateContinued
    | VerdictReached
    | DebateFinished
    | DebateFailed
    | DebateCancelled,
    Field(discriminator="type"),
]

FINAL_EVENTS = (DebateFinished, DebateFailed, DebateCancelled)


@runtime_checkable
class Sink(Protocol):
    async def handle(self, event: EventBase) -> None: ...


LOG_WRITE_FAILED = "Debate stopped: the log could not be written. Nothing after this was saved."


def log_stopped(reason: str) -> str:
    return f"Debate stopped: the log could not be written ({reason}). Nothing after this was saved."


LOG_DISK_FULL = log_stopped("the disk holding the debate log is full")


def log_write_failed(error: BaseException) -> str:
    """What a debate the log stopped tells its users: the reason when it is known (the log stayed locked,
    stayed unreachable, the disk is full), else LOG_WRITE_FAILED. Never the error's own text otherwise
    (it may name hosts or paths a chat user has no business seeing)."""
    from orchestrator.log.records import LogUnavailableError  # here: orchestrator.log imports this module

    if isinstance(error, LogUnavailableError):
        reason = str(error)
    elif getattr(error, "sqlstate", None) == "55P03":  # Postgres: lock_timeout ran out on another session's lock
        reason = "a table of the debate log stayed locked by another session past its lock_timeout"
    elif ("disk is full" in str(error) or getattr(error, "sqlite_errorcode", None) == 13  # SQLITE_FULL
          or getattr(error, "sqlstate", None) == "53100"):  # Postgres: disk_full
        return LOG_DISK_FULL
    else:
        return LOG_WRITE_FAILED
    return log_stopped(reason)


RETRY_FIRST_S = 0.2  # the first pause before a log write that failed is tried again
RETRY_CAP_S = 5.0  # the longest pause: a log that is writable again is written within this


class LogWriteFailed(Exception):
    """The log sink could not persist an event: the debate must stop (raised by `EventBus.emit`)."""


async def until_written(write: Callable[[], Awaitable[None]], what: str, *, first_s: float = RETRY_FIRST_S,
                        cap_s: float = RETRY_CAP_S, gives_up: tuple[type[Exception], ...] = ()) -> None:
    """Run `write` until it succeeds, pausing `first_s`, doubling up to `cap_s`, between attempts (a log
    locked or full for a while); a cancel ends it early, and so does an error of `gives_up` (one that
    no retry can mend), which is logged."""
    delay = first_s
    while True:
        try:
            await write()
            return
        except gives_up as exc:
            log.warning("%s failed for good: %s", what, exc)
            return
        except Exception as exc:
            log.warning("%s failed (%s); trying again in %.1f s", what, type(exc).__name__, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, cap_s)


async def log_failure(store: Sink, debate_id: str, outcome: Outcome) -> None:
    """Write the debate's failure through the log sink `store`, retrying until the log accepts it."""
    from orchestrator.log.records import StoreError  # here: orchestrator.log imports this module

    failed = DebateFailed(debate_id=debate_id, outcome=outcome)
    # a StoreError is for good (the debate is not in the log at all, the log is closed or read-only)
    await until_written(lambda: store.handle(failed), f"logging the failure of debate {debate_id}",
                        gives_up=(StoreError,))


class EventBus:
    """Persists each event through `log`, then delivers it to every sink in order.

    A platform sink that fails is logged and skipped (it must not take the debate down). A log write
    that fails stops the debate: that event and every later one are withheld from the platforms,
    which get one DebateFailed instead (`failure` holds its outcome), and `emit` raises LogWriteFailed.
    """

    def __init__(self, sinks: list[Sink] | None = None, *, log: Sink | None = None) -> None:
        self.log = log
        self.sinks: list[Sink] = list(sinks or [])
        self.failure: Outcome | None = None
        self.failure_logged = False  # the log has the DebateFailed of `failure`
        self._debate_id: str | None = None  # the debate the log stopped
        self._rounds = (0, 0)  # completed, planned
        self._tokens = (0, 0)

    @property
    def silent(self) -> bool:
        """Nothing is delivered anywhere: emitting to this bus has no effect to keep."""
        return self.log is None and not self.sinks

    async def emit(self, event: EventBase) -> None:
        if self.failure is not None:  # stopped: nothing more reaches the log or the platforms
            return
        if self.log is not None:
            try:
                await self.log.handle(event)
            except Exception as exc:
                LOG_WRITE_FAILURES.inc()
                log.exception("log write failed on %s for debate %s", type(event).__name__, event.debate_id)
                reason = log_write_failed(exc)
                await self._stop(event, reason)
                raise LogWriteFailed(reason) from exc
        self._count(event)
        if not isinstance(event, CallRecorded):  # the log's alone: no platform shows it
            await self._deliver(event)

    async def _deliver(self, event: EventBase) -> None:
        for sink in self.sinks:
            try:
                await sink.handle(event)
            except Exception:  # a broken platform sink must not take the debate down with it
                log.exception("sink %s failed on %s", type(sink).__name__, type(event).__name__)

    def _count(self, event: EventBase) -> None:
        """What the platforms have been shown, for the outcome of a debate the log stopped."""
        match event:
            case DebateStarted(spec=spec):
                self._rounds = (self._rounds[0], spec.rounds)
            case RoundCompleted(round=round, total=total):
                self._rounds = (max(self._rounds[0], round), total)
            case TurnCompleted(turn=turn) | TurnFailed(turn=turn):
                self._tokens = (self._tokens[0] + turn.input_tokens, self._tokens[1] + turn.output_tokens)
            case _:
                return

    async def record_failure(self) -> None:
        """Once the log stopped the debate: write its failure to the log, retrying (with a growing pause)
        until the log accepts it. Returns at once when there is nothing to record."""
        if self.failure is None or self.failure_logged or self.log is None or self._debate_id is None:
            return
        await log_failure(self.log, self._debate_id, self.failure)
        self.failure_logged = True

    async def _stop(self, event: EventBase, reason: str = LOG_WRITE_FAILED) -> None:
        """Tell the platforms the debate stopped; try once to log that too (the write may work again;
        `record_failure` keeps trying)."""
        if isinstance(event, DebateStarted):
            self._count(event)
        self._debate_id = event.debate_id
        self.failure = Outcome(status="failed", rounds_completed=self._rounds[0], rounds_planned=self._rounds[1],
                               input_tokens=self._tokens[0], output_tokens=self._tokens[1], error=reason)
        failed = DebateFailed(debate_id=event.debate_id, outcome=self.failure)
        if self.log is not None:
            try:
                await self.log.handle(failed)
                self.failure_logged = True
            except Exception:
                log.warning("could not log the failure of debate %s yet; it is tried again", event.debate_id)
        await self._deliver(failed)
