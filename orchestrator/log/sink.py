"""The sink that writes a debate's events to the log, before any platform renders them."""

from __future__ import annotations

from orchestrator.budgets import CallUsage
from orchestrator.events import (
    CallRecorded,
    DebateCancelled,
    DebateFailed,
    DebateFinished,
    DebateStarted,
    EventBase,
    Notice,
    TurnCompleted,
    TurnFailed,
    VerdictReached,
)
from orchestrator.log.protocol import DebateLog


class StoreSink:
    """Persists what matters and awaits each write; the EventBus holds every other sink back until
    it has returned (and stops the debate when it raises), so platforms only show logged events.

    Text deltas, round and turn starts are ignored: the finished turn carries the whole text, and
    one row per delta would cost a transaction per token. `Interjected` is ignored too: the note is in
    the log already, marked with its round when the round took it.
    """

    def __init__(self, store: DebateLog) -> None:
        self.store = store

    async def handle(self, event: EventBase) -> None:
        match event:
            case DebateStarted(spec=spec, at=at):
                await self.store.create_debate(spec, at=at)
            case TurnCompleted(turn=turn) | TurnFailed(turn=turn):
                await self.store.add_turn(turn)
            case CallRecorded():
                await self.store.add_call(CallUsage(
                    attempt=event.attempt, debate_id=event.debate_id, at=event.at, purpose=event.purpose,
                    model=event.model, input_tokens=event.input_tokens, output_tokens=event.output_tokens,
                    tokens_estimated=event.tokens_estimated))
            case Notice(debate_id=debate_id, level=level, text=text, at=at):
                await self.store.add_notice(debate_id, level, text, at=at)
            case VerdictReached(debate_id=debate_id, verdict=verdict, at=at, number=number):
                await self.store.set_verdict(debate_id, verdict, at=at, number=number)
            case (
                DebateFinished(debate_id=debate_id, outcome=outcome, at=at)
                | DebateFailed(debate_id=debate_id, outcome=outcome, at=at)
                | DebateCancelled(debate_id=debate_id, outcome=outcome, at=at)
            ):
                await self.store.finish_debate(debate_id, outcome, at=at)
            case _:
                return
