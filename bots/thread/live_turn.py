"""One turn as the thread shows it while it streams (`LiveTurn`), and the keys and start events of turns
(bots/thread/live.py streams them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bots.thread.keys import turn_key
from orchestrator.events import TurnStarted
from orchestrator.models import DebateSpec, Seat, Turn

TurnKey = tuple[int, str, str, int]  # round, seat, kind, take (a turn played again: bots.thread.keys)
FIRST_WORDS = 6  # a turn's first text shows once it holds this many words (or the turn ended, or the wait ran out)
SEAT_ROLES = ("proposer", "challenger", "debater", "judge")


def message_key(key: TurnKey, part: int) -> str:
    round_, seat, kind, take = key
    return turn_key(round_, seat, kind, part, take)


def seat_of(spec: DebateSpec, event: TurnStarted) -> Seat:
    """The debater's seat, or for the judge or a summarizer (not a debater's chair) one made up alike."""
    try:
        return spec.seat(event.seat)
    except KeyError:
        role = event.role if event.role in SEAT_ROLES else "judge"
        return Seat(label=event.seat, role=role, model=event.model)  # type: ignore[arg-type]


def started(turn: Turn, take: int = 0) -> TurnStarted:
    """The start event of a turn whose start was never seen."""
    return TurnStarted(debate_id=turn.debate_id, round=turn.round, seat=turn.seat, role=turn.role,
                       kind=turn.kind, model=turn.model, take=take)


@dataclass
class LiveTurn:
    key: TurnKey
    header: str
    seat: Seat
    text: str = ""
    final: bool = False
    attempt: str | None = None  # the attempt at the turn whose text this is
    attempts: set[str] = field(default_factory=set)  # every attempt seen: an older one never comes back
    message_ids: list[str] = field(default_factory=list)
    shown: list[str | None] = field(default_factory=list)  # None: posted before this renderer, text unknown
    showing_text: bool = False  # a message of the turn shows some of its text (not only the placeholder)
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # text arrived, or the turn ended
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    posted: asyncio.Event = field(default_factory=asyncio.Event)  # ended, and every message it needs exists
    flusher: asyncio.Task[None] | None = None
    recorded_final: set[str] = field(default_factory=set)  # messages recorded as showing the final text when posted
    # the last rendering and what it was made of (text, final, cursor): a sync renders the same text several times
    rendered: tuple[tuple[str, bool, bool], list[str]] | None = None
