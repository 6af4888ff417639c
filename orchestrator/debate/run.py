"""One running debate's context: the calls a format makes, each turned into events and a Turn.

Every model call and every delivered event is a step (`steps`, orchestrator/debate/steps.py): a
durable run records each step's result and replays it on resume, so the code around the steps must
be deterministic given their results. A model call's step returns a `CallResult` (its completion,
or why it failed, and when it ran); the counters are updated from that result outside the step, so
a replayed call counts the same. The call's streamed text is sent from inside its step, tagged with
a random attempt id drawn there: a call that runs again after a restart streams as a new attempt.
Each round's audience notes are taken as one step too, when the round starts (`round_started`); from
then on every debater's prompt ends with them, quoted as untrusted text.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from orchestrator.config import Settings
from orchestrator.debate.audience import Audience, with_audience
from orchestrator.debate.deltas import DELTA_INTERVAL, DeltaBatcher
from orchestrator.debate.limits import SizeCap, TextTooLong, call_char_limit
from orchestrator.debate.steps import Direct, Steps
from orchestrator.events import (
    EventBase,
    EventBus,
    Interjected,
    Notice,
    RoundCompleted,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from orchestrator.models import MAX_INTERJECTIONS_PER_ROUND, DebateSpec, Interjection, Seat, Turn
from orchestrator.providers.base import Completion, Message, ModelCall, ProviderError
from orchestrator.providers.clients import ProviderRegistry
from orchestrator.providers.pricing import estimate_cost
from orchestrator.safety import Redactor, StreamRedactor, sanitize_metadata

log = logging.getLogger(__name__)
E = TypeVar("E", bound=EventBase)

CONFIG_ERROR = "config"  # CallResult.error_kind of a model string that does not resolve, or missing credentials


@dataclass
class CallStats:
    attempted: int = 0
    timed_out: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True  # False once any call used a model with no known price


class CallResult(BaseModel):
    """What one model call's step returns: the completion, or the error (raw: callers sanitize it)."""

    model_config = ConfigDict(frozen=True)

    started_at: float
    duration_ms: int
    completion: Completion | None = None
    error: str = ""
    error_kind: str = ""  # ProviderError.kind ("timeout", "auth", …), or CONFIG_ERROR


@dataclass(repr=False)  # a repr would carry the settings (API keys) into any log that prints a step
class DebateRun:
    """What a format sees: the spec, and `turn()` / `aux()` to call models with events emitted.

    Every event leaves through `emit`, which scrubs it with `redact` (secrets, control characters)
    before any sink sees it; streamed text is scrubbed per call, holding back what could be a secret.
    """

    spec: DebateSpec
    settings: Settings
    registry: ProviderRegistry
    bus: EventBus
    transcript: list[Turn] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stats: CallStats = field(default_factory=CallStats)
    redact: Redactor = field(default_factory=Redactor)
    steps: Steps = field(default_factory=Direct)
    delta_interval: float = DELTA_INTERVAL  # how often streamed text is sent (longer for a durable stream)
    audience: Audience | None = None  # None: no notes are taken (and no step is spent asking)
    interjections: list[Interjection] = field(default_factory=list)  # every note taken so far, as shown

    @property
    def debate_id(self) -> str:
        return self.spec.id

    def __repr__(self) -> str:
        return f"DebateRun({self.debate_id})"

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
        """Scrub `event` and deliver it, as one step; returns the scrubbed event (what the sinks saw).

        A bus that delivers nowhere (a silent run's) takes no step. Streamed text does not come
        through here: a model call's step sends it (`_TurnText`).
        """
        shown = type(event).model_validate(self.redact.value(event.model_dump()))
        if self.bus.silent or isinstance(shown, TextDelta):
            await self.bus.emit(shown)
        else:
            await self.steps.call(self.bus.emit, shown)
        return shown

    async def _call(self, model_string: str, call: ModelCall, stream: tuple[int, str, str] | None = None) -> CallResult:
        """One model call as a step; the counters are updated here, from its result."""

        async def model_call() -> CallResult:  # a closure: what a stopped step's log line shows stays short
            return await self._call_model(model_string, call, stream)

        result = await self.steps.call(model_call, preemptible=True)
        if result.error_kind == CONFIG_ERROR:
            return result
        self.stats.attempted += 1
        if result.completion is None:
            if result.error_kind == "timeout":
                self.stats.timed_out += 1
            return result
        completion = result.completion
        self.stats.input_tokens += completion.input_tokens
        self.stats.output_tokens += completion.output_tokens
        cost = estimate_cost(model_string, completion.input_tokens, completion.output_tokens)
        if cost is None:
            self.stats.cost_known = False
        else:
            self.stats.cost_usd += cost
        return result

    async def _call_model(
        self, model_string: str, call: ModelCall, stream: tuple[int, str, str] | None
    ) -> CallResult:
        """The step: call the model; with `stream` (round, seat, kind), send its text as it arrives."""
        started = time.time()
        clock = time.perf_counter()

        def elapsed_ms() -> int:
            return int((time.perf_counter() - clock) * 1000)

        try:
            provider, model = self.registry.resolve(model_string)
        except (KeyError, ValueError) as exc:  # unresolvable model string or missing credentials
            return CallResult(started_at=started, duration_ms=0, error=str(exc), error_kind=CONFIG_ERROR)
        call = call.model_copy(update={"model": model})
        text = _TurnText(self, *stream) if stream is not None else None
        batcher = DeltaBatcher(text.send, interval=self.delta_interval) if text is not None else None
        cap = SizeCap(call_char_limit(model_string.split(":", 1)[0], call), batcher.add if batcher else None)
        try:
            try:
                async with asyncio.timeout(call.timeout_s + 5):  # backstop if a provider ignores its own bound
                    completion = cap.check(await provider.complete(call, cap.add))
            except TextTooLong:
                completion = await cap.cut(call, elapsed_ms())
            finally:
                if batcher is not None and text is not None:
                    await batcher.flush()
                    await text.finish()
        except TimeoutError:
            return CallResult(started_at=started, duration_ms=elapsed_ms(), error_kind="timeout",
                              error=f"{model_string} timed out after {call.timeout_s:.0f} s")
        except ProviderError as exc:
            return CallResult(started_at=started, duration_ms=elapsed_ms(), error=str(exc), error_kind=exc.kind)
        return CallResult(started_at=started, duration_ms=elapsed_ms(), completion=completion)

    async def turn(self, seat: Seat, round: int, kind: str, system: str, user: str, *, record: bool = True) -> Turn:
        """Call `seat`'s model, streaming its text as TextDelta events; never raises for model failures:
        a failed call comes back as a Turn with status "failed" and a user-safe error. Once the audience
        sent any note, `user` ends with the quoted notes (orchestrator/debate/audience.py)."""
        user = with_audience(user, self.interjections)
        await self.emit(
            TurnStarted(debate_id=self.debate_id, round=round, seat=seat.label, role=seat.role, kind=kind,
                        model=seat.model)
        )
        result = await self._call(seat.model, self.model_call(seat.model, system, user), (round, seat.label, kind))
        base = dict(debate_id=self.debate_id, round=round, seat=seat.label, role=seat.role, kind=kind,
                    model=seat.model, started_at=result.started_at)
        completion = result.completion
        if completion is None:
            turn = Turn(**base, status="failed", error=sanitize_metadata(result.error), duration_ms=result.duration_ms)
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
        result = await self._call(model, self.model_call(model, system, user, max_tokens, continuation))
        if result.completion is None:
            log.warning("debate %s: auxiliary call to %s failed: %s", self.debate_id, model,
                        sanitize_metadata(result.error))
            return None
        return result.completion.text

    async def notice(self, text: str, level: str = "info") -> None:
        shown = await self.emit(Notice(debate_id=self.debate_id, level=level, text=text))  # type: ignore[arg-type]
        if level == "warning":
            self.warnings.append(shown.text)

    async def round_started(self, round: int, total: int, title: str = "") -> None:
        """The round begins: the audience's notes for it are taken (one step: a resumed run gets the
        same notes back), then RoundStarted and one Interjected per note are emitted."""
        notes: list[Interjection] = []
        if self.audience is not None:
            notes = (await self.steps.call(self.audience.take, self.debate_id, round))[:MAX_INTERJECTIONS_PER_ROUND]
        await self.emit(RoundStarted(debate_id=self.debate_id, round=round, total=total, title=title))
        for note in notes:
            if note.round is None:
                note = note.model_copy(update={"round": round})
            shown = await self.emit(Interjected(debate_id=self.debate_id, interjection=note))
            self.interjections.append(shown.interjection)  # later prompts quote what was logged and shown

    async def round_completed(self, round: int, total: int) -> None:
        await self.emit(RoundCompleted(debate_id=self.debate_id, round=round, total=total))


class _TurnText:
    """One call's streamed text: scrubbed as it arrives (holding back what could be a secret), sent as
    TextDelta events tagged with this attempt and the characters of it already sent (`offset`)."""

    def __init__(self, run: DebateRun, round: int, seat: str, kind: str) -> None:
        self._run = run
        self._where = dict(debate_id=run.debate_id, round=round, seat=seat, kind=kind)
        self._attempt = uuid.uuid4().hex[:12]  # drawn inside the step: a call run again is a new attempt
        self._offset = 0
        self._redactor: StreamRedactor = run.redact.stream()

    async def send(self, text: str) -> None:
        await self._emit(self._redactor.feed(text))

    async def finish(self) -> None:
        await self._emit(self._redactor.finish())

    async def _emit(self, shown: str) -> None:
        if not shown:
            return
        event = TextDelta(**self._where, delta=shown, attempt=self._attempt, offset=self._offset)  # type: ignore[arg-type]
        self._offset += len(shown)
        await self._run.bus.emit(event)
