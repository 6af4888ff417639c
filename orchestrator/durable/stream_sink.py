"""`StreamSink`: the events a thread shows, written to the running workflow's DBOS stream from inside the
step that delivers them (`DBOS.write_stream_async`).

Each write is a transaction for the worker and a read for the front, and some of a debate's events come
in runs a few milliseconds apart (a notice, the verdict, the debate's end). So an event is held
(`HOLD_S` at most) and goes in one write with the events after it, as one stream entry holding a list:
the next event that is written at once (a turn's start, so a thread can post the turn's message before
its text comes, and its text, which is already paced), the end of the step, or the hold's end, whichever
comes first. The end of a step flushes (`Durable` runs `step_ended` inside every step of the workflow,
before DBOS records it), so a step recorded has written everything it delivered, and a replay that gets
its record back has nothing to deliver again. An event delivered outside a step is written at once, one
entry per event, as DBOS checkpoints each such write as a step of the workflow.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from dbos import DBOS, error

from orchestrator.durable.names import STREAM
from orchestrator.durable.steps import in_step
from orchestrator.events import CallRecorded, DebateStarted, EventBase, RoundCompleted, TextDelta, TurnStarted

log = logging.getLogger(__name__)

HOLD_S = 0.5  # an event waits this long at most for the events after it (as a stream's first text: STREAM_PACE)

# What the log keeps and no thread shows (a call's tokens, the spec the front already posted, a round's end;
# bots/thread/sink.py renders the rest): not streamed
UNSHOWN = (CallRecorded, DebateStarted, RoundCompleted)
AT_ONCE = (TurnStarted, TextDelta)  # written when delivered, with what is held before them


class StreamSink:
    """Writes each event a thread shows to the running workflow's stream, in order. One writer at a time:
    the lanes of a parallel round would otherwise race for the stream's next offset."""

    def __init__(self, *, hold_s: float = HOLD_S) -> None:
        self._lock = asyncio.Lock()
        self._hold_s = hold_s
        self._held: list[dict[str, Any]] = []
        self._due: asyncio.TimerHandle | None = None
        self._late: set[asyncio.Task[None]] = set()  # writes the hold's end started

    async def handle(self, event: EventBase) -> None:
        if isinstance(event, UNSHOWN):
            return
        self._held.append(event.model_dump(mode="json"))
        if isinstance(event, AT_ONCE) or self._hold_s <= 0 or not in_step():
            await self.flush()
        elif self._due is None:
            # the call-back runs in this step's context (asyncio copies it), so its write is this step's
            self._due = asyncio.get_running_loop().call_later(self._hold_s, self._hold_ended)

    async def flush(self, *, only_in_step: bool = False) -> None:
        """Write what is held, after any write under way; returns once it is committed. `only_in_step`:
        not once the step this runs in has ended (its end wrote what it held)."""
        self._cancel_hold()
        async with self._lock:
            if only_in_step and not in_step():
                return
            values, self._held = self._held, []
            if values:
                await self._write(values)

    async def _write(self, values: list[dict[str, Any]]) -> None:
        """In a step: one entry (one event, or a list of them). Outside one: an entry per event."""
        if in_step():
            await DBOS.write_stream_async(STREAM, values if len(values) > 1 else values[0])
            return
        for value in values:
            await DBOS.write_stream_async(STREAM, value)

    async def step_ended(self) -> None:
        """The end of a step of the workflow (before DBOS records it): what it holds is written now. A write
        that fails is logged, as the bus does for a sink's failure; the step goes on."""
        await self._flush_logged()

    async def _flush_logged(self, *, only_in_step: bool = False) -> None:
        try:
            await self.flush(only_in_step=only_in_step)
        except error.DBOSWorkflowConflictIDError:  # the workflow is no longer this execution's: a stop
            log.info("stream write after the debate was stopped: not written")
        except Exception:
            log.exception("stream write failed")

    def _cancel_hold(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None

    def _hold_ended(self) -> None:
        """The hold's end, in the context of the step that began it: its write, unless that step ends first
        (a write from an ended step's context would be taken for the workflow's own; what is held by then
        is a later step's, written at its end or its own hold's)."""
        self._due = None
        task = asyncio.get_running_loop().create_task(self._flush_logged(only_in_step=True), name="stream-hold")
        self._late.add(task)
        task.add_done_callback(self._late.discard)
