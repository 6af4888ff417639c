"""What the engine emits while a debate runs, and the Sink protocol that consumes it.

Sinks are called in order for every event and must return quickly: a platform sink buffers text
deltas and flushes them from its own task. The store sink comes first, so a turn is in the log
before any platform shows it.
"""

from __future__ import annotations

import logging
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.models import DebateSpec, Outcome, Turn, Verdict, now

log = logging.getLogger(__name__)


class EventBase(BaseModel):
    model_config = ConfigDict(frozen=True)

    debate_id: str
    at: float = Field(default_factory=now)


class DebateStarted(EventBase):
    type: Literal["debate_started"] = "debate_started"
    spec: DebateSpec


class RoundStarted(EventBase):
    type: Literal["round_started"] = "round_started"
    round: int
    total: int
    title: str = ""  # e.g. "Openings", "Rebuttals"


class TurnStarted(EventBase):
    type: Literal["turn_started"] = "turn_started"
    round: int
    seat: str
    role: str
    kind: str
    model: str


class TextDelta(EventBase):
    type: Literal["text_delta"] = "text_delta"
    round: int
    seat: str
    kind: str
    delta: str


class TurnCompleted(EventBase):
    type: Literal["turn_completed"] = "turn_completed"
    turn: Turn


class TurnFailed(EventBase):
    type: Literal["turn_failed"] = "turn_failed"
    turn: Turn


class RoundCompleted(EventBase):
    type: Literal["round_completed"] = "round_completed"
    round: int
    total: int


class Notice(EventBase):
    """Something users should see that is not a turn: warnings, the distilled question, stances."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "warning"] = "info"
    text: str


class VerdictReached(EventBase):
    type: Literal["verdict"] = "verdict"
    verdict: Verdict


class DebateFinished(EventBase):
    type: Literal["debate_finished"] = "debate_finished"
    outcome: Outcome


class DebateFailed(EventBase):
    type: Literal["debate_failed"] = "debate_failed"
    outcome: Outcome


class DebateCancelled(EventBase):
    type: Literal["debate_cancelled"] = "debate_cancelled"
    outcome: Outcome


Event = Annotated[
    DebateStarted
    | RoundStarted
    | TurnStarted
    | TextDelta
    | TurnCompleted
    | TurnFailed
    | RoundCompleted
    | Notice
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


class EventBus:
    """Delivers each event to every sink in order; one failing sink never stops the debate."""

    def __init__(self, sinks: list[Sink] | None = None) -> None:
        self.sinks: list[Sink] = list(sinks or [])

    def subscribe(self, sink: Sink) -> None:
        self.sinks.append(sink)

    async def emit(self, event: EventBase) -> None:
        for sink in self.sinks:
            try:
                await sink.handle(event)
            except Exception:  # a broken sink must not take the debate down with it
                log.exception("sink %s failed on %s", type(sink).__name__, type(event).__name__)
