"""One thread hop fewer per DBOS step and per workflow (DBOS's private `Pending`, dbos/_outcome.py).

DBOS composes an async step as `Pending` stages, and its `then` stage (a step's record, a workflow's
result) hops to the thread pool twice: once to call `before`, which for `then` is `lambda: next` and only
hands back the function to run, and once to run that function after the body. A hop to the pool costs
40–110 µs of CPU on two cores (the task's future, the worker thread's wake-up, the loop's self-pipe write,
the GIL changing hands twice), and a step takes three: its check, that empty one, and its record.
`install` replaces `then` with the same stage minus the empty hop: the body, then `next` in the pool, the
exceptions handled as DBOS's `_wrap` handles them (the record of an error, a cancellation passed on).

Where the system database allows (dbos_steps_on_loop.py: Postgres through async psycopg, SQLite on the loop's
own connection while the file is free), a step hops to the pool not at all: `install` also replaces
`intercept`, and a step's check (`intercept`) and record (`then`) run DBOS's own code on the loop with the
statement sent from there. DBOS's check, asked there, says what to read; the loop reads it and asks again with
the answer. DBOS's record leaves its row to the loop to write. Only DBOS's step functions are run so (known by
name, STEP_CHECK and STEP_RECORD); a workflow's own start and end still hop. Around a step whose record the loop
writes on Postgres, `riding` takes the stream writes the step's end hands over (dbos_stream_writes.Rides), and
the record's statement writes them with it.

DBOS's private API, pinned with the rest (dbos_private.py PINNED_MINOR); tests/test_dbos_step_hops.py runs
steps and workflows through it on a real SQLite system database and counts the hops (without the loop's
records installed), tests/test_dbos_steps_on_loop.py with them, on SQLite and Postgres.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dbos._dbos import _get_dbos_instance
from dbos._logger import dbos_logger
from dbos._outcome import DeferredResult, NoResult, Pending

from orchestrator.durable.dbos_steps_on_loop import POOL, Fetch, LoopSteps, OnLoop, loop_steps, on_loop
from orchestrator.durable.dbos_stream_writes import Rides, riding

if TYPE_CHECKING:
    from dbos import DBOS

T = TypeVar("T")
R = TypeVar("R")
DBOS_THEN = Pending.then  # DBOS's own, as imported (a test puts them back)
DBOS_INTERCEPT = Pending.intercept
STEP_CHECK = "invoke_step.<locals>.check_existing_result"  # DBOS's step functions (dbos/_core.py)
STEP_RECORD = "invoke_step.<locals>.record_step_result"


async def _then(func: Callable[[], Coroutine[Any, Any, T]], after: Callable[[Callable[[], T]], R],
                dbos: DBOS | None) -> R:
    """DBOS's `Pending._wrap` with `after` given, not fetched from the pool; a step's record written from
    the loop where the system database allows (`_after`), with the stream writes its end handed over."""
    if dbos is not None:
        await dbos._configure_asyncio_thread_pool()
    records = _loop_records(after, STEP_RECORD)
    # a record sent as one statement (Postgres) takes the stream writes its step's end hands over
    sys_db = records.records.sys_db if records is not None and records.postgres is not None else None
    with riding(sys_db) if sys_db is not None else nullcontext() as rides:
        try:
            value = await func()
            result = await _after(after, lambda: value, records, rides)
        except asyncio.CancelledError:
            dbos_logger.warning(f"Asyncio task cancelled for workflow or step {func}")
            raise
        except BaseException as exp:
            saved = exp  # not the `as` name: Python deletes that at the end of the block, before the lambda runs
            result = await _after(after, lambda: Pending._raise(saved), records, rides)
    if isinstance(result, DeferredResult):
        return cast(R, await result.resolve_async())
    return result


async def _after(after: Callable[[Callable[[], T]], R], value: Callable[[], T], records: LoopSteps | None,
                 rides: Rides | None = None) -> R:
    """`after(value)`: in the pool, or (a step's record, `records` given) on the loop, the record it leaves
    written from there (dbos_steps_on_loop.LoopSteps) with the stream writes the step handed over (`rides`);
    an error of the record's replaces the step's, as when DBOS's record raises."""
    if records is None:
        return await asyncio.to_thread(after, value)
    step = OnLoop()
    token = on_loop.set(step)
    try:
        result = after(value)
    finally:
        on_loop.reset(token)
        if step.record is not None:
            await records.record(*step.record, rides=rides.take() if rides is not None else None)
    if rides is not None:
        await rides.write_alone()  # none left, unless DBOS recorded the step its own way (a child workflow's)
    return result


async def _intercept(func: Callable[[], Coroutine[Any, Any, T]],
                     interceptor: Callable[[], NoResult | DeferredResult[T] | T], *, dbos: DBOS | None = None) -> T:
    """DBOS's `Pending._intercept`, a step's check sent from the loop where the system database allows:
    DBOS's check runs there, says what to fetch, and runs again with the answer."""
    if dbos is not None:
        await dbos._configure_asyncio_thread_pool()
    records = _loop_records(interceptor, STEP_CHECK)
    intercepted = POOL if records is None else await _check_on_loop(interceptor, records)
    if intercepted is POOL:
        intercepted = await asyncio.to_thread(interceptor)
    if isinstance(intercepted, NoResult):
        return await func()
    if isinstance(intercepted, DeferredResult):
        return cast(T, await intercepted.resolve_async())
    return cast(T, intercepted)


async def _check_on_loop(interceptor: Callable[[], Any], records: LoopSteps) -> Any:
    """DBOS's check run on the loop: asked once, it says what to read; read, it is asked again with the
    answer. POOL when the loop could not read at once (SQLite's file locked): DBOS's check in the pool."""
    step = OnLoop()
    token = on_loop.set(step)
    try:
        try:
            return interceptor()
        except Fetch as wanted:
            step.answer = await records.check(*wanted.args)
            if step.answer is POOL:
                return POOL
            return interceptor()
    finally:
        on_loop.reset(token)


def _loop_records(fn: Callable[..., Any], name: str) -> LoopSteps | None:
    """What sends `fn`'s statement from the loop, if it is DBOS's step function `name`."""
    if getattr(fn, "__qualname__", None) != name:
        return None
    steps = loop_steps(_get_dbos_instance()._sys_db)
    return steps if steps is not None and steps.available else None


def _pending_then(self: Pending[T], next: Callable[[Callable[[], T]], R], *,
                  dbos: DBOS | None = None) -> Pending[R]:
    func = self._func
    return Pending[R](lambda: _then(func, next, dbos))


def _pending_intercept(self: Pending[T], interceptor: Callable[[], NoResult | DeferredResult[T] | T], *,
                       dbos: DBOS | None = None) -> Pending[T]:
    func = self._func
    return Pending[T](lambda: _intercept(func, interceptor, dbos=dbos))


def install() -> bool:
    """Swap `Pending.then` for the one without the empty hop, and both it and `Pending.intercept` for ones
    that send a step's record and check from the loop where they can; False if it was already. For the
    whole process (every DBOS step and workflow in it), from the next step composed on."""
    if Pending.then is _pending_then:  # type: ignore[comparison-overlap]
        return False
    Pending.then = _pending_then  # type: ignore[method-assign,assignment]
    Pending.intercept = _pending_intercept  # type: ignore[method-assign,assignment]
    return True
