"""One thread hop fewer per DBOS step and per workflow (DBOS's private `Pending`, dbos/_outcome.py).

DBOS composes an async step as `Pending` stages, and its `then` stage (a step's record, a workflow's
result) hops to the thread pool twice: once to call `before`, which for `then` is `lambda: next` and only
hands back the function to run, and once to run that function after the body. A hop to the pool costs
40–110 µs of CPU on two cores (the task's future, the worker thread's wake-up, the loop's self-pipe write,
the GIL changing hands twice), and a step takes three: its check, that empty one, and its record.
`install` replaces `then` with the same stage minus the empty hop: the body, then `next` in the pool, the
exceptions handled as DBOS's `_wrap` handles them (the record of an error, a cancellation passed on).

DBOS's private API, pinned with the rest (dbos_private.py PINNED_MINOR); tests/test_dbos_step_hops.py runs
steps and workflows through it on a real SQLite system database and counts the hops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dbos._logger import dbos_logger
from dbos._outcome import DeferredResult, Pending

if TYPE_CHECKING:
    from dbos import DBOS

T = TypeVar("T")
R = TypeVar("R")
DBOS_THEN = Pending.then  # DBOS's own, as imported (a test puts it back)


async def _then(func: Callable[[], Coroutine[Any, Any, T]], after: Callable[[Callable[[], T]], R],
                dbos: DBOS | None) -> R:
    """DBOS's `Pending._wrap` with `after` given, not fetched from the pool."""
    if dbos is not None:
        await dbos._configure_asyncio_thread_pool()
    try:
        value = await func()
        result = await asyncio.to_thread(after, lambda: value)
    except asyncio.CancelledError:
        dbos_logger.warning(f"Asyncio task cancelled for workflow or step {func}")
        raise
    except BaseException as exp:
        saved = exp  # not the `as` name: Python deletes that at the end of the block, before the lambda runs
        result = await asyncio.to_thread(after, lambda: Pending._raise(saved))
    if isinstance(result, DeferredResult):
        return cast(R, await result.resolve_async())
    return result


def _pending_then(self: Pending[T], next: Callable[[Callable[[], T]], R], *,
                  dbos: DBOS | None = None) -> Pending[R]:
    func = self._func
    return Pending[R](lambda: _then(func, next, dbos))


def install() -> bool:
    """Swap `Pending.then` for the one without the empty hop; False if it was already. For the whole
    process (every DBOS step and workflow in it), from the next step composed on."""
    if Pending.then is _pending_then:  # type: ignore[comparison-overlap]
        return False
    Pending.then = _pending_then  # type: ignore[method-assign,assignment]
    return True
