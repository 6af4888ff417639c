"""Starts, limits, tracks and cancels debates. Each debate is one asyncio task kept in a dict."""

from __future__ import annotations

import asyncio
import logging

from orchestrator.debate.engine import Engine
from orchestrator.events import EventBus, Sink
from orchestrator.log.sink import StoreSink
from orchestrator.log.store import Store
from orchestrator.models import DebateSpec, Outcome

log = logging.getLogger(__name__)


class TooManyDebates(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"{limit} debates are already running; try again when one finishes.")


class DebateJobs:
    """Every running debate, by id. Holding the task here keeps it from being garbage-collected."""

    def __init__(self, engine: Engine, store: Store, *, max_concurrent: int = 50) -> None:
        self.engine = engine
        self.store = store
        self.max_concurrent = max_concurrent
        self._tasks: dict[str, asyncio.Task[Outcome]] = {}

    def running(self) -> list[str]:
        return list(self._tasks)

    def is_running(self, debate_id: str) -> bool:
        return debate_id in self._tasks

    def start(self, spec: DebateSpec, sinks: list[Sink] | None = None) -> asyncio.Task[Outcome]:
        """Start a debate now; the store persists every event before `sinks` see it."""
        if spec.id in self._tasks:
            return self._tasks[spec.id]
        if len(self._tasks) >= self.max_concurrent:
            raise TooManyDebates(self.max_concurrent)
        bus = EventBus([StoreSink(self.store), *(sinks or [])])
        task = asyncio.create_task(self.engine.run(spec, bus), name=f"debate-{spec.id}")
        self._tasks[spec.id] = task
        task.add_done_callback(lambda _t, debate_id=spec.id: self._tasks.pop(debate_id, None))
        return task

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
