"""Admits, starts, tracks and cancels debates. Each debate is one asyncio task kept in a dict.

A debate is admitted before anything about it is posted (`admit`: the log counts the quotas and
reserves its row in one transaction, orchestrator/quotas.py has the rules), then started once its
platform has somewhere to render it (`start`). An admitted debate that will never start gives its
slot back (`abandon`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from orchestrator.debate.audience import Audience
from orchestrator.debate.engine import Engine
from orchestrator.events import EventBus, LogWriteFailed, Sink
from orchestrator.log import DebateLog, StoreSink
from orchestrator.models import DebateSpec, Interjection, Outcome, Turn, Verdict
from orchestrator.quotas import Quota

log = logging.getLogger(__name__)


class DebateJobs:
    """Every running debate, by id. Holding the task here keeps it from being garbage-collected."""

    def __init__(self, engine: Engine, store: DebateLog, *, max_concurrent: int = 50) -> None:
        """`max_concurrent` is the global cap an `admit` without a chat quota holds to (the operator's)."""
        self.engine = engine
        self.store = store
        self.max_concurrent = max_concurrent
        self._tasks: dict[str, asyncio.Task[Outcome]] = {}

    def running(self) -> list[str]:
        return list(self._tasks)

    def is_running(self, debate_id: str) -> bool:
        return debate_id in self._tasks

    async def admit(self, spec: DebateSpec, quota: Quota | None = None) -> None:
        """Reserve the debate's slot in the log, or raise QuotaExceeded (nothing logged, nothing to undo).

        `quota`: a chat user's (`Quota.from_settings`); None is the operator, held to the global cap only.
        """
        await self.store.admit(spec, quota or Quota.operator(self.max_concurrent))

    async def abandon(self, debate_id: str, reason: str) -> None:
        """An admitted debate that will not start (its root message could not be posted): it ends failed,
        with `reason`, and holds no slot."""
        await self.store.finish_debate(debate_id, Outcome(status="failed", error=reason))

    def start(self, spec: DebateSpec, sinks: list[Sink] | None = None, *, audience: Audience | None = None
              ) -> asyncio.Task[Outcome]:
        """Start a debate now (admitted already, unless quotas do not apply); the store persists every
        event before `sinks` see it. `audience`: where each round's notes come from (None: none)."""
        return self._launch(spec.id, sinks, lambda bus: self.engine.run(spec, bus, audience=audience))

    def start_continuation(
        self,
        spec: DebateSpec,
        sinks: list[Sink] | None = None,
        *,
        segment: int,
        history: Sequence[Turn],
        previous: Verdict,
        rounds_done: int,
        carried: tuple[int, int, float | None],
        audience: Audience | None = None,
        earlier_notes: Sequence[Interjection] = (),
    ) -> asyncio.Task[Outcome]:
        """Run segment `segment` of a debate whose continuation the log has begun (`begin_continuation`);
        the arguments are `Engine.continue_debate`'s."""
        return self._launch(spec.id, sinks, lambda bus: self.engine.continue_debate(
            spec, segment=segment, history=history, previous=previous, rounds_done=rounds_done, carried=carried,
            bus=bus, audience=audience, earlier_notes=earlier_notes))

    def _launch(self, debate_id: str, sinks: list[Sink] | None,
                play: Callable[[EventBus], Awaitable[Outcome]]) -> asyncio.Task[Outcome]:
        if debate_id in self._tasks:
            return self._tasks[debate_id]
        bus = EventBus(list(sinks or []), log=StoreSink(self.store))
        task = asyncio.create_task(self._run(play, bus), name=f"debate-{debate_id}")
        self._tasks[debate_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(debate_id, None))
        return task

    async def _run(self, play: Callable[[EventBus], Awaitable[Outcome]], bus: EventBus) -> Outcome:
        """The engine's outcome, unless the log stopped the debate: then the outcome users were shown,
        once the log has the failure (retried until the log accepts it: the debate must not stay running)."""
        try:
            outcome = await play(bus)
        except LogWriteFailed:
            assert bus.failure is not None
            outcome = bus.failure
        await bus.record_failure()
        return bus.failure or outcome

    def find(self, id_or_prefix: str) -> str | None:
        matches = [d for d in self._tasks if d.startswith(id_or_prefix)]
        return matches[0] if len(matches) == 1 else None

    def cancel(self, id_or_prefix: str) -> bool:
        debate_id = self.find(id_or_prefix)
        if debate_id is None:
            return False
        self._tasks[debate_id].cancel()
        return True

    async def shutdown(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
