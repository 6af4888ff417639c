"""One running debate's context: the calls a format makes, each turned into events and a Turn.

Every model call is a step (`steps`, orchestrator/debate/steps.py), and every delivered event is delivered inside
one (its own, or the next step's: `emit`): a durable run records each step's result and replays it on resume, so
the code around the steps must be deterministic given their results. A call's step returns a `CallResult`; the
counters are updated from it outside the step, so a replayed call counts the same. Its streamed text is sent from
inside the step, tagged with an attempt id drawn there: a call run again after a restart streams as a new attempt.
A debater's turn is one step (TurnStarted, the call, TurnCompleted or TurnFailed); a round's start is one too
(`round_started`: the audience's notes taken, then delivered, and quoted in every later prompt). A brief
(orchestrator/brief/) opens every debater's and judge's prompt with the sections chosen from what was recorded,
so a replayed run builds the same prompts; a turn's citations are checked beside the next turn (citation_checks.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, TypeVar

from orchestrator import tracing
from orchestrator.brief.prompt import brief_prompt, with_brief
from orchestrator.budgets import SpendWatch
from orchestrator.config import Settings
from orchestrator.debate.audience import Audience, with_audience
from orchestrator.debate.call_results import CONFIG_ERROR, CallResult, CallStats, TurnResult, closing_event
from orchestrator.debate.citation_checks import CitationChecks
from orchestrator.debate.deltas import LIVE, DeltaBatcher, TextPace
from orchestrator.debate.echo import EchoFilter, strip_echo
from orchestrator.debate.limits import SizeCap, TextTooLong, call_char_limit
from orchestrator.debate.repeats import RepeatGuard, Repeating, without_loop
from orchestrator.debate.steps import Direct, Steps
from orchestrator.debate.turn_text import TurnText, noting_first
from orchestrator.events import (
    FINAL_EVENTS,
    CallRecorded,
    EventBase,
    EventBus,
    Interjected,
    Notice,
    RoundCompleted,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnStarted,
)
from orchestrator.metrics import model_labels, observe_call
from orchestrator.models import MAX_INTERJECTIONS_PER_ROUND, DebateSpec, EvidenceCheck, Interjection, Seat, Turn
from orchestrator.providers.base import AnswerSchema, Completion, Message, ModelCall, ProviderError
from orchestrator.providers.clients import ProviderRegistry
from orchestrator.providers.pricing import estimate_cost
from orchestrator.safety import Redactor, sanitize_metadata

log = logging.getLogger(__name__)
E = TypeVar("E", bound=EventBase)

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
    pace: TextPace = LIVE  # how streamed text is sent (a durable stream: less often, and no tail)
    audience: Audience | None = None  # None: no notes are taken (and no step is spent asking)
    interjections: list[Interjection] = field(default_factory=list)  # every note taken so far, as shown
    round_span: tracing.Opened | None = None  # the current round's span, while tracing
    spend: SpendWatch | None = None  # None: no budget is set (the after-round step asks nothing)
    stopped_early: str | None = None  # why the debate stops after this round (a budget spent): the formats stop
    brief_prompts: dict[str, str] = field(default_factory=dict)  # the brief as each stage's prompts carry it
    citations: CitationChecks = field(default_factory=CitationChecks)  # checked beside the next turn

    @property
    def evidence_checks(self) -> list[EvidenceCheck]:
        """Every citation check settled so far: what a judge's transcript marks and the confidence weighs."""
        return self.citations.done

    @property
    def debate_id(self) -> str:
        return self.spec.id

    def __repr__(self) -> str:
        return f"DebateRun({self.debate_id})"

    def model_call(
        self, model: str, system: str, user: str, max_tokens: int | None = None, continuation: tuple[Message, ...] = (),
        answer_schema: AnswerSchema | None = None,
    ) -> ModelCall:
        return ModelCall(
            answer_schema=answer_schema,
            model=model,
            messages=(Message(role="system", content=system), Message(role="user", content=user), *continuation),
            effort=self.spec.effort,
            max_tokens=max_tokens,
            timeout_s=self.settings.debate_call_timeout,
            read_every_s=self.pace.read_every,
        )

    def scrub(self, event: E) -> E:
        """`event` as every sink sees it: secrets and control characters taken out (`redact`)."""
        return type(event).model_validate(self.redact.value(event.model_dump()))

    async def emit(self, event: E) -> E:
        """Scrub `event` and deliver it; returns the scrubbed event (what the sinks saw). A debate's
        closing event is a step of its own; any other goes with the next step (`Steps.defer`): what
        follows an event is always another step, and the last is the closing one.

        A bus that delivers nowhere (a silent run's) takes no step. Streamed text does not come
        through here: a model call's step sends it (`TurnText`).
        """
        shown = self.scrub(event)
        if self.bus.silent or isinstance(shown, TextDelta):
            await self.bus.emit(shown)
        elif isinstance(shown, FINAL_EVENTS):
            await self.steps.call(self.bus.emit, shown)
        else:
            await self.steps.defer(self.bus.emit, shown)
        return shown

    async def emit_together(self, *events: EventBase) -> list[EventBase]:
        """Scrub and deliver `events` in order as one step (events that always follow one another)."""
        shown = [self.scrub(event) for event in events]

        async def deliver() -> None:
            for event in shown:
                await self.bus.emit(event)

        if self.bus.silent:
            await deliver()
        else:
            await self.steps.call(deliver)
        return shown

    async def _call(self, model_string: str, call: ModelCall, purpose: str) -> CallResult:
        """One model call as a step, its tokens logged (CallRecorded) inside it; the counters are updated
        here, from its result."""

        async def model_call() -> CallResult:  # a closure: what a stopped step's log line shows stays short
            result = await self._call_model(model_string, call, None)
            if (used := result.used) is not None:  # a failed call that streamed text is paid for too
                await self.bus.emit(CallRecorded(debate_id=self.debate_id, at=result.started_at, purpose=purpose,
                                                 attempt=uuid.uuid4().hex, model=model_string,
                                                 input_tokens=used.input_tokens, output_tokens=used.output_tokens,
                                                 tokens_estimated=used.tokens_estimated))
            return result

        return self._count(model_string, await self.steps.call(model_call, preemptible=True))

    def _count(self, model_string: str, result: CallResult) -> CallResult:
        """Add a call's result to the counters (outside its step: a replayed call counts the same)."""
        if result.error_kind == CONFIG_ERROR:
            return result
        self.stats.attempted += 1
        if result.completion is None and result.error_kind == "timeout":
            self.stats.timed_out += 1
        completion = result.used
        if completion is None:
            return result
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
        """The step: call the model; with `stream` (round, seat, kind), send its text as it arrives.
        Counted in the process's metrics and traced here, where the call runs (a replayed step is not)."""
        first_token: list[float] = []
        with self._chat_span(model_string, stream) as span:
            result = await self._make_call(model_string, call, stream, first_token)
            completion = result.used
            tracing.note(span, {"gen_ai.usage.input_tokens": completion.input_tokens,
                                "gen_ai.usage.output_tokens": completion.output_tokens} if completion else {},
                         error=result.error_kind)
        if result.error_kind != CONFIG_ERROR:
            observe_call(model_string, result.duration_ms / 1000, error_kind=result.error_kind,
                         input_tokens=completion.input_tokens if completion else 0,
                         output_tokens=completion.output_tokens if completion else 0,
                         cost_usd=estimate_cost(model_string, completion.input_tokens, completion.output_tokens)
                         if completion else None,
                         first_token_s=first_token[0] if first_token else None)
        return result

    def _chat_span(self, model_string: str, stream: tuple[int, str, str] | None) -> Any:
        """The call's `chat {model}` span (GenAI conventions); a debater's turn says its round, seat and kind."""
        if not tracing.enabled():
            return tracing.span("", {})
        provider, _, operation = model_labels(model_string)
        model = model_string.partition(":")[2] or model_string  # a span is one call: its model as asked for
        attributes: dict[str, Any] = {tracing.CONVERSATION: self.debate_id, "gen_ai.operation.name": operation,
                                      "gen_ai.provider.name": provider, "gen_ai.request.model": model}
        if stream is not None:
            attributes.update({"debate.round": stream[0], "debate.seat": stream[1], "debate.turn.kind": stream[2]})
        return tracing.span(f"{operation} {model}", attributes)

    async def _make_call(
        self, model_string: str, call: ModelCall, stream: tuple[int, str, str] | None, first_token: list[float]
    ) -> CallResult:
        started = time.time()
        clock = time.perf_counter()

        def elapsed_ms() -> int:
            return int((time.perf_counter() - clock) * 1000)

        try:
            provider, model = self.registry.resolve(model_string)
        except (KeyError, ValueError) as exc:  # unresolvable model string or missing credentials
            return CallResult(started_at=started, duration_ms=0, error=str(exc), error_kind=CONFIG_ERROR)
        call = call.model_copy(update={"model": model})
        text = TurnText(self.bus, self.redact, self.debate_id, *stream) if stream is not None else None
        batcher = DeltaBatcher(text.send, pace=self.pace) if text is not None else None
        cap = SizeCap(call_char_limit(model_string.split(":", 1)[0], call), batcher.add if batcher else None)
        # a debater's turn: a loop ends the call (repeats.py), and its copy of our quoting is taken out (echo.py)
        guard = RepeatGuard(cap.add)
        echo = EchoFilter() if stream is not None else None
        on_delta = echo.wrap(guard.add) if echo is not None else cap.add
        try:
            try:
                async with asyncio.timeout(call.timeout_s + 5):  # backstop if a provider ignores its own bound
                    completion = await provider.complete(call, noting_first(on_delta, clock, first_token))
                    if echo is not None:
                        await guard.add(echo.finish())
                        completion = without_loop(completion.model_copy(update={"text": strip_echo(completion.text)}))
                    completion = cap.check(completion)
                if completion.cut and stream is not None:  # a debater's turn the model ended at its token limit
                    completion = await cap.reached_limit(call, completion)
            except TextTooLong:
                completion = await cap.cut(call, elapsed_ms())
            except Repeating:
                completion = await guard.cut(call, elapsed_ms())
            finally:
                if batcher is not None and text is not None and self.pace.tail:
                    await batcher.flush()
                    await text.finish()
        except TimeoutError:
            return CallResult(started_at=started, duration_ms=elapsed_ms(), error_kind="timeout",
                              error=f"{model_string} timed out after {call.timeout_s:.0f} s",
                              spent=cap.spent(call, elapsed_ms()))
        except ProviderError as exc:
            return CallResult(started_at=started, duration_ms=elapsed_ms(), error=str(exc), error_kind=exc.kind,
                              spent=cap.spent(call, elapsed_ms(), (exc.input_tokens, exc.output_tokens)))
        return CallResult(started_at=started, duration_ms=elapsed_ms(), completion=completion)

    async def turn(self, seat: Seat, round: int, kind: str, system: str, user: str, *, record: bool = True) -> Turn:
        """Call `seat`'s model, streaming its text as TextDelta events; never raises for model failures:
        a failed call comes back as a Turn with status "failed" and a user-safe error. Once the audience
        sent any note, `user` ends with the quoted notes (orchestrator/debate/audience.py)."""
        call = self.model_call(seat.model, system, with_audience(with_brief(user, self.brief_for_round(round)),
                                                                 self.interjections))
        where: dict[str, Any] = dict(debate_id=self.debate_id, round=round, seat=seat.label, role=seat.role,
                                     kind=kind, model=seat.model)
        started = self.scrub(TurnStarted(**where))

        async def model_turn() -> TurnResult:  # one step: a resumed debate gets the turn back as shown
            await self.bus.emit(started)
            result = await self._call_model(seat.model, call, (round, seat.label, kind))
            closing = self.scrub(closing_event(where, result))
            await self.bus.emit(closing)
            return TurnResult(call=result, event=closing)

        done = await self.steps.call(model_turn, preemptible=True)
        self._count(seat.model, done.call)
        turn = done.event.turn
        if record and isinstance(done.event, TurnCompleted):  # later prompts read what was stored and shown
            self.transcript.append(turn)
            await self.check_evidence(turn)
        return turn

    async def check_evidence(self, turn: Turn) -> None:
        """Start checking the citations `turn` makes, beside the debate's next turn (citation_checks.py)."""
        self.citations.start(self.spec, self.settings, self.steps, turn, self.scrub_check,
                             lambda event: self.bus.emit(self.scrub(event)))

    async def settled_evidence(self) -> list[EvidenceCheck]:
        """Every check started so far, once ended (the judge's wait): `evidence_checks`, in turn order."""
        return await self.citations.settled(self.debate_id)

    def abandon_checks(self) -> None:
        self.citations.abandon()

    def scrub_check(self, check: EvidenceCheck) -> EvidenceCheck:
        """A check as it is kept and shown: secrets and control characters out of its quote and detail."""
        return EvidenceCheck.model_validate(self.redact.value(check.model_dump()))

    async def aux(
        self,
        model: str,
        system: str,
        user: str,
        *,
        max_tokens: int | None = None,
        continuation: tuple[Message, ...] = (),
        purpose: str = "judge",
    ) -> str | None:
        """A behind-the-scenes call (summaries, distilling, judging): text, or None when it failed.
        `continuation` adds later turns of the same conversation (a retry after a bad answer); `purpose`
        is what the log calls it (judge, summary, split, …)."""
        completion = await self.aux_completion(model, system, user, max_tokens=max_tokens, continuation=continuation,
                                               purpose=purpose)
        return completion.text if completion is not None else None

    async def aux_completion(
        self, model: str, system: str, user: str, *, max_tokens: int | None = None,
        continuation: tuple[Message, ...] = (), answer_schema: AnswerSchema | None = None, purpose: str = "judge",
    ) -> Completion | None:
        """`aux` with the call's tokens, and `answer_schema` for a provider's structured-output mode. A judge's
        call (`purpose` "judge": a judge pass, a juror, a council's chair) reads the brief first."""
        if purpose == "judge":
            user = with_brief(user, self.brief_for_judge())
        result = await self._call(model, self.model_call(model, system, user, max_tokens, continuation, answer_schema),
                                  purpose)
        if result.completion is None:
            log.warning("debate %s: auxiliary call to %s failed: %s", self.debate_id, model,
                        sanitize_metadata(result.error))
            return None
        return result.completion

    async def notice(self, text: str, level: str = "info", *, with_verdict: bool = False) -> None:
        """A notice for users; `with_verdict`: a caveat the verdict message states too (see `Notice`)."""
        shown = await self.emit(Notice(debate_id=self.debate_id, level=level, text=text,  # type: ignore[arg-type]
                                       with_verdict=with_verdict))
        if level == "warning":
            self.warnings.append(shown.text)

    async def round_started(self, round: int, total: int, title: str = "") -> None:
        """The round begins, as one step: the audience's notes for it are taken (a resumed run gets the
        same notes back), then RoundStarted and one Interjected per note are delivered."""
        started = self.scrub(RoundStarted(debate_id=self.debate_id, round=round, total=total, title=title))
        self.end_round_span()  # a round a format left without completing it
        self.round_span = tracing.open_span(f"round {round}", {tracing.CONVERSATION: self.debate_id,
                                                                "debate.round": round})

        async def start_round() -> list[Interjection]:
            notes: list[Interjection] = []
            if self.audience is not None:
                notes = (await self.audience.take(self.debate_id, round))[:MAX_INTERJECTIONS_PER_ROUND]
            await self.bus.emit(started)
            shown: list[Interjection] = []
            for note in notes:
                if note.round is None:
                    note = note.model_copy(update={"round": round})
                event = self.scrub(Interjected(debate_id=self.debate_id, interjection=note))
                await self.bus.emit(event)
                shown.append(event.interjection)
            return shown

        if self.audience is None and self.bus.silent:
            await start_round()
            return
        self.interjections.extend(await self.steps.call(start_round))  # later prompts quote what was shown

    async def round_completed(self, round: int, total: int) -> None:
        """The round ends, and before a later round (or a jury) the spend is checked, in the same step
        whether or not a budget is set (so setting one never changes a running debate's steps): once a
        budget is spent, `stopped_early` says why and a notice tells users (the formats then stop, and the
        verdict covers the rounds so far, from one judge: the jury does not sit)."""
        shown = self.scrub(RoundCompleted(debate_id=self.debate_id, round=round, total=total))
        last = round >= total
        watch = self.spend if not last or self.spec.judges else None  # a jury is checked for, as a round is

        async def complete_round() -> str | None:
            await self.bus.emit(shown)
            return await watch.stop_reason(self.spec, last=last) if watch is not None else None

        reason = await complete_round() if self.bus.silent else await self.steps.call(complete_round)
        self.end_round_span()
        if reason is not None:
            self.stopped_early = reason
            await self.notice(reason, "warning")

    def brief_for_round(self, round: int) -> str:
        """The brief as round `round`'s debaters read it: the sections most relevant to the topic, the notes
        and the turns before this round, when it does not all fit (orchestrator/brief/select.py). Made from
        what the debate recorded, so a resumed debate's prompts are the same."""
        if not self.spec.brief.sources:
            return ""
        key = f"round {round}"
        if key not in self.brief_prompts:
            earlier = [t.text for t in self.transcript if t.round == round - 1] or \
                [t.text for t in self.transcript if t.round < round][-4:]
            about = "\n".join([self.spec.topic, *(n.text for n in self.interjections), *earlier])
            self.brief_prompts[key] = brief_prompt(self.spec.brief, about)
        return self.brief_prompts[key]

    def brief_for_judge(self) -> str:
        """The brief as a judge reads it: the sections most relevant to the topic and the whole debate."""
        if not self.spec.brief.sources:
            return ""
        key = f"judge {len(self.transcript)}"
        if key not in self.brief_prompts:
            about = "\n".join([self.spec.topic, *(t.text for t in self.transcript)])
            self.brief_prompts[key] = brief_prompt(self.spec.brief, about)
        return self.brief_prompts[key]

    def end_round_span(self) -> None:
        """End the current round's span (called in the context that opened it: the format's)."""
        tracing.close(self.round_span)
        self.round_span = None
