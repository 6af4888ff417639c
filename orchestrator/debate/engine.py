"""Runs a DebateSpec: the format's rounds, the failure policy, the judge, and the closing events; and
continues a completed debate for one more round and a new verdict (orchestrator/debate/continuation.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from orchestrator import tracing
from orchestrator.budgets import SpendWatch
from orchestrator.config import Settings
from orchestrator.debate.audience import Audience
from orchestrator.debate.continuation import play as play_continuation
from orchestrator.debate.continuation import settle_change
from orchestrator.debate.deltas import LIVE, TextPace
from orchestrator.debate.formats import get_format
from orchestrator.debate.formats.base import FormatResult
from orchestrator.debate.judge import judge
from orchestrator.debate.jury import jury
from orchestrator.debate.run import DebateRun
from orchestrator.debate.steps import Direct, Steps
from orchestrator.events import (
    DebateCancelled,
    DebateContinued,
    DebateFailed,
    DebateFinished,
    DebateStarted,
    EventBus,
    LogWriteFailed,
    VerdictReached,
)
from orchestrator.logs import about_debate
from orchestrator.metrics import DEBATES_FINISHED, DEBATES_RUNNING, DEBATES_STARTED
from orchestrator.models import DebateSpec, Interjection, Outcome, Turn, Verdict
from orchestrator.providers.clients import ProviderRegistry
from orchestrator.safety import Redactor

log = logging.getLogger(__name__)

ALL_TIMED_OUT = "Debate failed: all model calls timed out."
NOTHING_RECORDED = "Debate failed: no exchanges were recorded."


class Engine:
    def __init__(self, registry: ProviderRegistry, settings: Settings, spend: SpendWatch | None = None) -> None:
        self.registry = registry
        self.settings = settings
        self.spend = spend  # checked after each round when a budget is set (orchestrator/budgets.py)
        self.redact = Redactor(settings.secrets())  # the one redactor: DebateRun.emit applies it to every event

    async def run(
        self,
        spec: DebateSpec,
        bus: EventBus,
        *,
        steps: Steps | None = None,
        audience: Audience | None = None,
        pace: TextPace = LIVE,
    ) -> Outcome:
        """Run `spec` to its end, every event through `bus`. `steps`: how model calls and deliveries are
        checkpointed (Direct, the default: not at all); `audience`: where each round's notes come from
        (None: no notes); `pace`: how streamed text is sent."""
        run = self._new_run(spec, bus, steps, audience, pace)
        await run.emit(DebateStarted(debate_id=spec.id, spec=spec))
        for note in spec.brief.notes:  # a source that could not be read: one line each, and the debate goes on
            await run.notice(note)

        async def play() -> Outcome:
            return await self._conclude(run, await get_format(spec.format).run(run))

        return await self._guarded(run, play)

    async def continue_debate(
        self,
        spec: DebateSpec,
        *,
        segment: int,
        history: Sequence[Turn],
        previous: Verdict,
        rounds_done: int,
        carried: tuple[int, int, float | None],
        bus: EventBus,
        steps: Steps | None = None,
        audience: Audience | None = None,
        earlier_notes: Sequence[Interjection] = (),
        pace: TextPace = LIVE,
    ) -> Outcome:
        """Segment `segment` (2, 3, …) of a completed debate: one more round over `history` (its turns so
        far, `rounds_done` rounds), then verdict number `segment`, which says whether `previous`'s winner
        changed. `carried`: the input tokens, output tokens and cost (None: unknown) of the segments
        before, so the outcome's totals are the whole debate's. `earlier_notes`: the audience notes the
        earlier segments took (the prompts quote them again); this segment's come from `audience`."""
        run = self._new_run(spec, bus, steps, audience, pace)
        run.transcript.extend(t for t in history if t.status == "ok")  # what the formats keep for prompts
        run.interjections.extend(n for n in earlier_notes if n.round is not None)
        run.stats.input_tokens, run.stats.output_tokens = carried[0], carried[1]
        run.stats.cost_known = carried[2] is not None
        run.stats.cost_usd = carried[2] or 0.0
        planned = rounds_done + 1
        await run.emit(DebateContinued(debate_id=spec.id, segment=segment, round=planned))

        async def play() -> Outcome:
            result = await play_continuation(run, previous, rounds_done)
            return await self._conclude(run, result, number=segment, previous=previous)

        return await self._guarded(run, play, planned=planned)

    def _new_run(self, spec: DebateSpec, bus: EventBus, steps: Steps | None, audience: Audience | None,
                 pace: TextPace) -> DebateRun:
        return DebateRun(spec=spec, settings=self.settings, registry=self.registry, bus=bus, redact=self.redact,
                         steps=steps or Direct(), audience=audience, pace=pace, spend=self.spend)

    async def _guarded(self, run: DebateRun, play: Callable[[], Awaitable[Outcome]], *,
                       planned: int | None = None) -> Outcome:
        """`play`'s outcome; a stop (a cancelled task, when the steps say that is a stop) ends the debate
        cancelled, and a crash ends it failed, each with its closing event. A log that stopped the debate
        is no crash: LogWriteFailed goes to whoever runs the debate, which records the failure. Counted in
        the metrics, and traced (the `debate` span): a debate resumed after a restart counts as started
        again where it resumes."""
        labels = (run.spec.platform, run.spec.format)
        DEBATES_STARTED.labels(*labels).inc()
        DEBATES_RUNNING.inc()
        traced = {tracing.CONVERSATION: run.debate_id, "debate.format": run.spec.format,
                  "debate.platform": run.spec.platform}
        try:
            with about_debate(run.debate_id, run.spec.workspace), tracing.span("debate", traced) as span:
                try:
                    outcome = await self._played(run, play, planned)
                finally:
                    run.end_round_span()
                tracing.note(span, {"debate.status": outcome.status, "debate.rounds": outcome.rounds_completed,
                                    "gen_ai.usage.input_tokens": outcome.input_tokens,
                                    "gen_ai.usage.output_tokens": outcome.output_tokens})
        except LogWriteFailed:
            DEBATES_FINISHED.labels(*labels, "failed").inc()
            raise
        finally:
            DEBATES_RUNNING.dec()
        DEBATES_FINISHED.labels(*labels, outcome.status).inc()
        return outcome

    async def _played(self, run: DebateRun, play: Callable[[], Awaitable[Outcome]], planned: int | None) -> Outcome:
        try:
            return await self._checks_ended_with(run, play)
        except LogWriteFailed:
            raise
        except asyncio.CancelledError:
            if not run.steps.task_cancel_is_stop:  # the process is stopping: the debate resumes elsewhere
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            outcome = self._outcome(run, "cancelled", rounds=_rounds_done(run), error="Stopped on request.",
                                    planned=planned)
            return (await run.emit(DebateCancelled(debate_id=run.debate_id, outcome=outcome))).outcome
        except Exception as exc:
            log.exception("debate %s crashed", run.debate_id)
            return await self._fail(run, f"Debate failed: internal error ({type(exc).__name__}).", _rounds_done(run),
                                    planned=planned)

    @staticmethod
    async def _checks_ended_with(run: DebateRun, play: Callable[[], Awaitable[Outcome]]) -> Outcome:
        """`play`, and no evidence check left running once it ends however it ends (the judge waited for them,
        or the debate stopped without a verdict)."""
        try:
            return await play()
        finally:
            run.abandon_checks()

    async def _conclude(self, run: DebateRun, result: FormatResult, *, number: int = 1,
                        previous: Verdict | None = None) -> Outcome:
        """The verdict (number `number`; with `previous`, it says whether the winner changed) and the end."""
        run.end_round_span()  # a round left uncompleted does not hold the judge's spans
        await run.settled_evidence()  # the checks of the last turns ran beside them: the judge reads them all
        if not run.transcript:
            if run.stats.attempted and run.stats.timed_out == run.stats.attempted:
                return await self._fail(run, ALL_TIMED_OUT, 0)
            return await self._fail(run, result.abort or NOTHING_RECORDED, 0)
        if result.abort:
            return await self._fail(run, result.abort, result.rounds_completed, planned=result.rounds_planned)
        verdict = result.verdict
        if verdict is None:
            judged = [t for t in run.transcript if t.round <= max(result.rounds_completed, 1)]
            # a jury: 2-5 judges, each with judge.py's passes; a spent budget seats one judge instead
            judgement = jury if run.spec.judges and run.stopped_early is None else judge
            verdict = await judgement(run, judged, context=result.judge_context, consensus=result.consensus,
                                      descriptions=result.descriptions)
        if verdict is None:
            await run.notice("The judge could not reach a verdict (its answers were unusable or it failed). "
                             "The transcript is kept in full.", "warning")
            outcome = self._outcome(run, "completed", rounds=result.rounds_completed, planned=result.rounds_planned)
            return (await run.emit(DebateFinished(debate_id=run.debate_id, outcome=outcome))).outcome
        if previous is not None:
            verdict = settle_change(verdict, previous)
        outcome = self._outcome(run, "completed", rounds=result.rounds_completed, planned=result.rounds_planned)
        finished = (await run.emit_together(VerdictReached(debate_id=run.debate_id, verdict=verdict, number=number),
                                            DebateFinished(debate_id=run.debate_id, outcome=outcome)))[-1]
        assert isinstance(finished, DebateFinished)
        return finished.outcome

    async def _fail(self, run: DebateRun, message: str, rounds: int, *, planned: int | None = None) -> Outcome:
        outcome = self._outcome(run, "failed", rounds=rounds, error=message, planned=planned)
        return (await run.emit(DebateFailed(debate_id=run.debate_id, outcome=outcome))).outcome

    def _outcome(self, run: DebateRun, status: str, *, rounds: int, error: str | None = None,
                 planned: int | None = None) -> Outcome:
        """`planned`: the rounds planned when not the spec's (a format's own plan, a continuation's)."""
        return Outcome(
            status=status,  # type: ignore[arg-type]
            rounds_completed=rounds,
            rounds_planned=planned or run.spec.rounds,
            input_tokens=run.stats.input_tokens,
            output_tokens=run.stats.output_tokens,
            cost_usd=round(run.stats.cost_usd, 6) if run.stats.cost_known else None,
            warnings=tuple(run.warnings),
            error=error,
        )


def _rounds_done(run: DebateRun) -> int:
    return max((t.round for t in run.transcript), default=0)
