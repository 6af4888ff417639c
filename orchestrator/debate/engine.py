"""Runs a DebateSpec: the format's rounds, the failure policy, the judge, and the closing events."""

from __future__ import annotations

import asyncio
import logging

from orchestrator.config import Settings
from orchestrator.debate.deltas import DELTA_INTERVAL
from orchestrator.debate.formats import get_format
from orchestrator.debate.formats.base import FormatResult
from orchestrator.debate.judge import judge
from orchestrator.debate.run import DebateRun
from orchestrator.debate.steps import Direct, Steps
from orchestrator.events import DebateCancelled, DebateFailed, DebateFinished, DebateStarted, EventBus, VerdictReached
from orchestrator.models import DebateSpec, Outcome
from orchestrator.providers.clients import ProviderRegistry
from orchestrator.safety import Redactor

log = logging.getLogger(__name__)

ALL_TIMED_OUT = "Debate failed: all model calls timed out."
NOTHING_RECORDED = "Debate failed: no exchanges were recorded."


class Engine:
    def __init__(self, registry: ProviderRegistry, settings: Settings) -> None:
        self.registry = registry
        self.settings = settings
        self.redact = Redactor(settings.secrets())  # the one redactor: DebateRun.emit applies it to every event

    async def run(
        self, spec: DebateSpec, bus: EventBus, *, steps: Steps | None = None, delta_interval: float = DELTA_INTERVAL
    ) -> Outcome:
        """Run `spec` to its end, every event through `bus`. `steps`: how model calls and deliveries are
        checkpointed (Direct, the default: not at all); `delta_interval`: how often streamed text is sent."""
        run = DebateRun(spec=spec, settings=self.settings, registry=self.registry, bus=bus, redact=self.redact,
                        steps=steps or Direct(), delta_interval=delta_interval)
        await run.emit(DebateStarted(debate_id=spec.id, spec=spec))
        try:
            result = await get_format(spec.format).run(run)
            return await self._conclude(run, result)
        except asyncio.CancelledError:
            if not run.steps.task_cancel_is_stop:  # the process is stopping: the debate resumes elsewhere
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            outcome = self._outcome(run, "cancelled", rounds=_rounds_done(run), error="Stopped on request.")
            return (await run.emit(DebateCancelled(debate_id=spec.id, outcome=outcome))).outcome
        except Exception as exc:
            log.exception("debate %s crashed", spec.id)
            return await self._fail(run, f"Debate failed: internal error ({type(exc).__name__}).", _rounds_done(run))

    async def _conclude(self, run: DebateRun, result: FormatResult) -> Outcome:
        if not run.transcript:
            if run.stats.attempted and run.stats.timed_out == run.stats.attempted:
                return await self._fail(run, ALL_TIMED_OUT, 0)
            return await self._fail(run, result.abort or NOTHING_RECORDED, 0)
        if result.abort:
            return await self._fail(run, result.abort, result.rounds_completed)
        verdict = result.verdict
        if verdict is None:
            judged = [t for t in run.transcript if t.round <= max(result.rounds_completed, 1)]
            verdict = await judge(run, judged, context=result.judge_context, consensus=result.consensus,
                                  descriptions=result.descriptions)
        if verdict is None:
            await run.notice("The judge could not reach a verdict (its answers were unusable or it failed). "
                             "The transcript is kept in full.", "warning")
        else:
            await run.emit(VerdictReached(debate_id=run.debate_id, verdict=verdict))
        outcome = self._outcome(run, "completed", rounds=result.rounds_completed)
        if result.rounds_planned:
            outcome = outcome.model_copy(update={"rounds_planned": result.rounds_planned})
        return (await run.emit(DebateFinished(debate_id=run.debate_id, outcome=outcome))).outcome

    async def _fail(self, run: DebateRun, message: str, rounds: int) -> Outcome:
        outcome = self._outcome(run, "failed", rounds=rounds, error=message)
        return (await run.emit(DebateFailed(debate_id=run.debate_id, outcome=outcome))).outcome

    def _outcome(self, run: DebateRun, status: str, *, rounds: int, error: str | None = None) -> Outcome:
        return Outcome(
            status=status,  # type: ignore[arg-type]
            rounds_completed=rounds,
            rounds_planned=run.spec.rounds,
            input_tokens=run.stats.input_tokens,
            output_tokens=run.stats.output_tokens,
            cost_usd=round(run.stats.cost_usd, 6) if run.stats.cost_known else None,
            warnings=tuple(run.warnings),
            error=error,
        )


def _rounds_done(run: DebateRun) -> int:
    return max((t.round for t in run.transcript), default=0)
