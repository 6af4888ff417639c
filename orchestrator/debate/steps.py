"""How a debate checkpoints its work: the `Steps` a DebateRun calls through, and `Direct`, the default.

A step is a piece of a debate whose effect must not repeat after a restart: a model call, or the
delivery of one event. `call` runs one, `start` runs one beside the debate's next steps (its place in the
record is taken when it is started), `gather` runs several concurrently, and `defer` hands a delivery to the
next step (a checkpointer records both with one record). `Direct` just runs them
(CLI, tests, benches: nothing survives the process). The durable checkpointer lives in
orchestrator/durable/steps.py: it records each step's result and replays it on resume, so the
debate code around the steps must be deterministic given their results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Steps(Protocol):
    # True: an asyncio cancellation of the debate's task is a user's stop (record it as cancelled).
    # False: the checkpointer has its own stop, and a task cancellation means the process is going
    # away: let it propagate, record nothing, and the debate resumes elsewhere.
    task_cancel_is_stop: bool

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any, preemptible: bool = False) -> T:
        """Run `fn(*args)` once. `preemptible`: a stop may interrupt it mid-way (model calls)."""
        ...

    def start(self, fn: Callable[..., Awaitable[T]], *args: Any) -> asyncio.Task[T]:
        """Run `fn(*args)` once as a step of its own, beside whatever the debate does next; await the task
        for its result. Its place among the steps is taken now, so a resumed debate finds its record."""
        ...

    async def gather(self, *coros: Awaitable[T]) -> list[T]:
        """Run `coros` concurrently; results in order. Each may make its own `call`s."""
        ...

    async def defer(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run `fn(*args)` (an idempotent delivery) at the latest at the start of the next `call`, inside
        it; a debate's last step is a `call`, so nothing deferred is left behind."""
        ...


class Direct:
    """No checkpoints: every step runs when called (in-process debates)."""

    task_cancel_is_stop = True

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any, preemptible: bool = False) -> T:
        return await fn(*args)

    def start(self, fn: Callable[..., Awaitable[T]], *args: Any) -> asyncio.Task[T]:
        return asyncio.ensure_future(fn(*args))

    async def gather(self, *coros: Awaitable[T]) -> list[T]:
        return list(await asyncio.gather(*coros))

    async def defer(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        await fn(*args)
