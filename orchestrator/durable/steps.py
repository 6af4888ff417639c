"""`Durable`: the checkpointer a debate workflow runs with (the `Steps` of orchestrator/debate/steps.py).

Each `call` is a DBOS step: its result is recorded, and a resumed workflow gets it back instead of running it
again. DBOS matches a step to its record by the id drawn when it is called, so every id here is drawn in the
calling task, in call order: a `gather`'s lanes reserve theirs up front, and a step `start`ed beside the next
ones draws its own when started. A deferred delivery (`defer`) runs at the start of the next step, inside it,
so one record stands for both. A stop is DBOS's cancel, checked again just before a model call starts; a
graceful stop drains (`drain`, `idle`, `abandon`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar, Token
from typing import Any, TypeVar

from dbos import DBOS, StepOptions, StepReservation, error

from orchestrator.durable import deferred

T = TypeVar("T")

LANE_SLOTS = 8  # steps one coroutine of a gather may take: a stances turn with its retry takes 3

_step_end: ContextVar[Callable[[], Awaitable[None]] | None] = ContextVar("debate_step_end", default=None)


class _Running:
    """Marks the body of a step while it runs; a task started in the step shares it, and sees its end."""

    ended = False


_running_step: ContextVar[_Running | None] = ContextVar("debate_running_step", default=None)


def in_step() -> bool:
    """Whether this runs in the body of a step of a workflow (not the workflow's own code, nor a task left
    over from a step that has ended)."""
    running = _running_step.get()
    return running is not None and not running.ended


def _unless_stopped(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """`fn`, unless the workflow was cancelled since DBOS's check before the step (while its deliveries were
    made): a model call is the one thing a stop must not let start."""

    async def body(*args: Any) -> T:
        workflow = DBOS.workflow_id
        found = await DBOS.list_workflows_async(workflow_ids=[workflow], load_input=False,
                                                load_output=False) if workflow else []
        if found and found[0].status == "CANCELLED":
            raise error.DBOSWorkflowCancelledError(f"Workflow {workflow} is cancelled: its model call is not made")
        return await fn(*args)

    return body


def _marked(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    async def body(*args: Any) -> T:
        running = _Running()
        token = _running_step.set(running)
        try:
            return await fn(*args)
        finally:
            running.ended = True
            _running_step.reset(token)

    return body


def at_each_step_end(hook: Callable[[], Awaitable[None]] | None) -> Token[Callable[[], Awaitable[None]] | None]:
    """In a workflow (and the branches it starts): `hook` runs at the end of each of its steps, inside the
    step, before DBOS records it (the stream sink writes what it held back). Returns the token to reset."""
    return _step_end.set(hook)


def reset_step_end(token: Token[Callable[[], Awaitable[None]] | None]) -> None:
    _step_end.reset(token)


def _ending_with(hook: Callable[[], Awaitable[None]], fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """`fn`, then `hook`, whether `fn` returned or raised (not when it was cancelled: nothing is recorded then)."""

    async def body(*args: Any) -> T:
        try:
            result = await fn(*args)
        except Exception:
            await hook()
            raise
        await hook()
        return result

    return body


def _step(fn: Callable[..., Awaitable[T]], body: Callable[..., Awaitable[T]],
          preemptible: bool) -> tuple[StepOptions, Callable[..., Awaitable[T]]]:
    """The step's options (named after `fn`) and `body` as it runs in the step: the workflow's step-end hook
    after it, inside the step, and marked as a step's body."""
    options: StepOptions = {"name": getattr(fn, "__qualname__", repr(fn)), "preemptible": preemptible}
    hook = _step_end.get()
    return options, _marked(_ending_with(hook, body) if hook is not None else body)


class _Lane:
    """The step ids reserved for one coroutine of a `gather`, used in order."""

    def __init__(self, reservations: Iterable[StepReservation]) -> None:
        self._left = deque(reservations)

    def next(self) -> StepReservation:
        if not self._left:
            raise RuntimeError(
                f"a parallel branch of a debate took more than {LANE_SLOTS} steps: raise LANE_SLOTS "
                "(and the workflow version: recorded debates were checkpointed with the old layout)"
            )
        return self._left.popleft()


_lane: ContextVar[_Lane | None] = ContextVar("debate_step_lane", default=None)


def in_lane() -> bool:
    """Whether this runs in a parallel branch of a workflow (`Durable.gather`), beside others."""
    return _lane.get() is not None


class Durable:
    task_cancel_is_stop = False  # a stop is a DBOS cancel; a task cancellation is the process going away

    def __init__(self) -> None:
        self._draining = False
        self._running: set[asyncio.Task[Any]] = set()  # tasks inside a step now
        self._parked: set[asyncio.Task[Any]] = set()  # tasks held back by a drain
        self._idle: asyncio.Event | None = None

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any, preemptible: bool = False) -> T:
        async def step() -> T:
            deliveries = deferred.take()
            # DBOS checks for a stop just before the step; deliveries made first take time, so check again after
            checked = _unless_stopped(fn) if preemptible and deliveries else fn
            options, body = _step(fn, deferred.delivering_first(deliveries, checked), preemptible)
            lane = _lane.get()
            if lane is not None:
                return await lane.next().run_async(options, body, *args)
            return await DBOS.run_step_async(options, body, *args)

        return await self._counted(step)

    def start(self, fn: Callable[..., Awaitable[T]], *args: Any) -> asyncio.Task[T]:
        """`fn(*args)` as a step running beside the workflow's next ones. Its id is drawn here, in the
        calling task (a lane's next, or the workflow's), so a replay matches it to its record whatever the
        order the tasks then run in. It takes none of the deliveries waiting (they go with the next `call`)."""
        options, body = _step(fn, fn, preemptible=False)
        lane = _lane.get()
        reservation = lane.next() if lane is not None else DBOS.reserve_step()
        return asyncio.ensure_future(self._counted(lambda: reservation.run_async(options, body, *args)))

    async def _counted(self, step: Callable[[], Awaitable[T]]) -> T:
        """`step`, as one of the steps `idle` waits for; once draining, held until the process stops."""
        task = asyncio.current_task()
        assert task is not None
        if self._draining:
            self._parked.add(task)
            await asyncio.get_running_loop().create_future()  # until the process stops (cancelled)
        self._running.add(task)
        try:
            return await step()
        finally:
            self._running.discard(task)
            if not self._running and self._idle is not None:
                self._idle.set()

    async def defer(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        deferred.here().deliveries.append((fn, args))

    async def flush(self) -> None:
        """Make the deliveries still waiting, as a step (none when nothing waits: a debate's closing step
        took them)."""
        if deferred.any_waiting():
            await self.call(deferred.deliver_deferred)

    async def gather(self, *coros: Awaitable[T]) -> list[T]:
        """Concurrent calls would draw ids in whatever order the tasks get scheduled, and a replay could hand
        one seat's recorded answer to another (same step name, no error): so LANE_SLOTS ids per coroutine are
        reserved up front, in order, and each coroutine's calls run at its own lane's ids. What the workflow
        deferred before goes with the first branch; a branch that ends with deliveries waiting takes one step
        more for them (every delivery is idempotent: a step never recorded delivers again when run again)."""
        if in_lane():
            raise RuntimeError("a parallel branch of a debate cannot fan out again")
        lanes = [_Lane([DBOS.reserve_step() for _ in range(LANE_SLOTS)]) for _ in coros]
        inherited = deferred.take()
        return list(await asyncio.gather(*(self._in_lane(lane, coro, inherited if i == 0 else [])
                                           for i, (lane, coro) in enumerate(zip(lanes, coros, strict=True)))))

    async def _in_lane(self, lane: _Lane, coro: Awaitable[T], inherited: list[deferred.Delivery]) -> T:
        _lane.set(lane)  # this task's own context: the lane is not seen by its siblings
        deferred.start_branch(inherited)
        try:
            result = await coro
        except Exception:
            await self.flush()
            raise
        await self.flush()
        return result

    # -- graceful stop ----------------------------------------------------------------------------

    def drain(self) -> None:
        """From now on no step starts (its workflow stays pending, to be recovered at the next launch); the
        ones running finish (see `idle`)."""
        self._draining = True
        self._idle = asyncio.Event()
        if not self._running:
            self._idle.set()

    async def idle(self, grace_s: float) -> bool:
        """Wait up to `grace_s` for the steps running at `drain` to finish; True when they all did."""
        assert self._idle is not None, "drain() first"
        try:
            async with asyncio.timeout(grace_s):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    async def abandon(self) -> None:
        """Cancel every task still in a step or held back (call before DBOS shuts down): nothing is
        recorded for them, so their workflows stay pending and resume at the next launch."""
        tasks = [t for t in self._running | self._parked if not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._running.clear()
        self._parked.clear()
