"""One running debate's context: the calls a format makes, each turned into events and a Turn."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import TypeVar

from orchestrator.config import Settings
from orchestrator.debate.deltas import DeltaBatcher
from orchestrator.debate.limits import SizeCap, TextTooLong, call_char_limit
from orchestrator.events import (
    EventBase,
    EventBus,
    Notice,
    RoundCompleted,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from orchestrator.models import DebateSpec, Seat, Turn
from orchestrator.providers.base import Completion, DeltaCallback, Message, ModelCall, ProviderError
from orchestrator.providers.clients import ProviderRegistry
from orchestrator.providers.pricing import estimate_cost
from orchestrator.safety import Redactor, StreamRedactor, sanitize_metadata

log = logging.getLogger(__name__)
E = TypeVar("E", bound=EventBase)


@dataclass
class CallStats:
    attempted: int = 0
    timed_out: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True  # False once any call used a model with no known price


@dataclass
class DebateRun:
    """What a format sees: the spec, and `turn()` / `aux()` to call models with events emitted.

    Every event leaves through `emit`, which scrubs it with `redact` (secrets, control characters)
    before any sink sees it; streamed text is scrubbed per turn, holding back what could be a secret.
    """

    spec: DebateSpec
    settings: Settings
    registry: ProviderRegistry
    bus: EventBus
    transcript: list[Turn] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stats: CallStats = field(default_factory=CallStats)
    redact: Redactor = field(default_factory=Redactor)
    _streams: dict[tuple[int, str, str], StreamRedactor] = field(default_factory=dict, init=False, repr=False)

    @property
    def debate_id(self) -> str:
        return self.spec.id

    def model_call(
        self, model: str, system: str, user: str, max_tokens: int | None = None, continuation: tuple[Message, ...] = ()
    ) -> ModelCall:
        return ModelCall(
            model=model,
            messages=(Message(role="system", content=system), Message(role="user", content=user), *continuation),
            effort=self.spec.effort,
            max_tokens=max_tokens,
            timeout_s=self.settings.debate_call_timeout,
        )

    async def emit(self, event: E) -> E:
        """Scrub `event` and deliver it; returns the scrubbed event (what the sinks saw)."""
        if isinstance(event, TextDelta):
            stream = self._streams.setdefault((event.round, event.seat, event.kind), self.redact.stream())
            shown = event.model_copy(update={"delta": stream.feed(event.delta)})
            if shown.delta:
                await self.bus.emit(shown)
            return shown
        if isinstance(event, TurnCompleted | TurnFailed):
            turn = event.turn
            stream = self._streams.pop((turn.round, turn.seat, turn.kind), None)
            rest = stream.finish() if stream is not None else ""
            if rest:
                await self.bus.emit(TextDelta(debate_id=self.debate_id, round=turn.round, seat=turn.seat,
                                              kind=turn.kind, delta=rest))
        shown = type(event).model_validate(self.redact.value(event.model_dump()))
        await self.bus.emit(shown)
        return shown

    async def _complete(self, model_string: str, call: ModelCall, on_delta: DeltaCallback | None = None) -> Completion:
        provider, model = self.registry.resolve(model_string)
        call = call.model_copy(update={"model": model})
        cap = SizeCap(call_char_limit(model_string.split(":", 1)[0], call), on_delta)
        self.stats.attempted += 1
        clock = time.perf_counter()
        try:
            async with asyncio.timeout(call.timeout_s + 5):  # backstop if a provider ignores its own bound
                completion = cap.check(await provider.complete(call, cap.add))
        except TextTooLong:
            completion = await cap.cut(call, int((time.perf_counter() - clock) * 1000))
        except TimeoutError:
            self.stats.timed_out += 1
            raise ProviderError(f"{model_string} timed out after {call.timeout_s:.0f} s", kind="timeout") from None
        except ProviderError as exc:
            if exc.kind == "timeout":
                self.stats.timed_out += 1
            raise
        self.stats.input_tokens += completion.input_tokens
        self.stats.output_tokens += completion.output_tokens
        cost = estimate_cost(model_string, completion.input_tokens, completion.output_tokens)
        if cost is None:
            self.stats.cost_known = False
        else:
            self.stats.cost_usd += cost
        return completion

    async def turn(self, seat: Seat, round: int, kind: str, system: str, user: str, *, record: bool = True) -> Turn:
        """Call `seat`'s model, streaming its text as TextDelta events; never raises for model failures:
        a failed call comes back as a Turn with status "failed" and a user-safe error."""
        await self.emit(
            TurnStarted(debate_id=self.debate_id, round=round, seat=seat.label, role=seat.role, kind=kind,
                        model=seat.model)
        )
        started = time.time()
        clock = time.perf_counter()

        async def emit_text(text: str) -> None:
            await self.emit(TextDelta(debate_id=self.debate_id, round=round, seat=seat.label, kind=kind, delta=text))

        batcher = DeltaBatcher(emit_text)

        base = dict(debate_id=self.debate_id, round=round, seat=seat.label, role=seat.role, kind=kind,
                    model=seat.model, started_at=started)
        try:
            try:
                call = self.model_call(seat.model, system, user)
                completion = await self._complete(seat.model, call, batcher.add)
            finally:
                await batcher.flush()
        except ProviderError as exc:
            turn = Turn(**base, status="failed", error=sanitize_metadata(str(exc)),
                        duration_ms=int((time.perf_counter() - clock) * 1000))
            return (await self.emit(TurnFailed(debate_id=self.debate_id, turn=turn))).turn
        except (KeyError, ValueError) as exc:  # unresolvable model string or missing credentials
            turn = Turn(**base, status="failed", error=sanitize_metadata(str(exc)))
            return (await self.emit(TurnFailed(debate_id=self.debate_id, turn=turn))).turn
        turn = Turn(**base, text=completion.text, duration_ms=completion.duration_ms,
                    input_tokens=completion.input_tokens, output_tokens=completion.output_tokens)
        turn = (await self.emit(TurnCompleted(debate_id=self.debate_id, turn=turn))).turn
        if record:  # later prompts read what was stored and shown: scrubbed, and cut to size
            self.transcript.append(turn)
        return turn

    async def aux(
        self,
        model: str,
        system: str,
        user: str,
        *,
        max_tokens: int | None = None,
        continuation: tuple[Message, ...] = (),
    ) -> str | None:
        """A behind-the-scenes call (summaries, distilling, judging): text, or None when it failed.
        `continuation` adds later turns of the same conversation (a retry after a bad answer)."""
        try:
            completion = await self._complete(model, self.model_call(model, system, user, max_tokens, continuation))
        except (ProviderError, KeyError, ValueError) as exc:
            log.warning("debate %s: auxiliary call to %s failed: %s", self.debate_id, model,
                        sanitize_metadata(str(exc)))
            return None
        return completion.text

    async def notice(self, text: str, level: str = "info") -> None:
        shown = await self.emit(Notice(debate_id=self.debate_id, level=level, text=text))  # type: ignore[arg-type]
        if level == "warning":
            self.warnings.append(shown.text)

    async def round_started(self, round: int, total: int, title: str = "") -> None:
        await self.emit(RoundStarted(debate_id=self.debate_id, round=round, total=total, title=title))

    async def round_completed(self, round: int, total: int) -> None:
        await self.emit(RoundCompleted(debate_id=self.debate_id, round=round, total=total))
