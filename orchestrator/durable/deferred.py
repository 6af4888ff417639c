"""The deliveries a debate deferred to its next step (`Durable.defer`), and the step body that runs them first.

A workflow's own steps and each parallel branch's are a sequence of their own, each with its own waiting
deliveries, so the step that takes a delivery is the same one in a replay as in the first run: a replay
that gets a step's record back skips that step's deliveries, which the first run made before recording
it. (Were the branches to share one list, whichever branch called first would take them, and a replay
could hand a delivery that was never made to a step that was recorded without it.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import Any, TypeVar

from dbos import DBOS

T = TypeVar("T")
Delivery = tuple[Callable[..., Awaitable[None]], tuple[Any, ...]]


class Waiting:
    """The deliveries of one sequence of steps of workflow `owner`, oldest first."""

    def __init__(self, owner: str, deliveries: Iterable[Delivery] = ()) -> None:
        self.owner = owner
        self.deliveries = list(deliveries)

    def take(self) -> list[Delivery]:
        taken, self.deliveries = self.deliveries, []
        return taken


_waiting: ContextVar[Waiting | None] = ContextVar("debate_deferred", default=None)


def _workflow() -> str:
    return DBOS.workflow_id or ""


def _current() -> Waiting | None:
    """This task's waiting deliveries, when they belong to the workflow running now."""
    waiting = _waiting.get()
    return waiting if waiting is not None and waiting.owner == _workflow() else None


def here() -> Waiting:
    """This sequence's waiting deliveries (a task's own context: a workflow's, or one branch's)."""
    waiting = _current()
    if waiting is None:
        waiting = Waiting(_workflow())
        _waiting.set(waiting)
    return waiting


def any_waiting() -> bool:
    waiting = _current()
    return waiting is not None and bool(waiting.deliveries)


def take() -> list[Delivery]:
    """The deliveries for the step being called, no longer waiting."""
    waiting = _current()
    return waiting.take() if waiting is not None else []


def start_branch(inherited: list[Delivery]) -> None:
    """In a parallel branch's own task: its sequence begins with `inherited` waiting."""
    _waiting.set(Waiting(_workflow(), inherited))


def delivering_first(deliveries: list[Delivery], fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """`fn`, or a step body that makes `deliveries` first, in order, then returns what `fn` returns."""
    if not deliveries:
        return fn

    async def body(*args: Any) -> T:
        for deliver, deliver_args in deliveries:
            await deliver(*deliver_args)
        return await fn(*args)

    return body


async def deliver_deferred() -> None:
    """A step that only makes the deliveries waiting for it (a sequence that ended without a step after them)."""
    return None
