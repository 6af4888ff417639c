"""A front's live debates: each one's events read from the workers' stream into its thread.

`FrontTailer` owns one task per live debate, reading its feed (durable debates: `orchestrator.durable.FrontFeed`) into
its `ThreadSink`: the one the front opened when it started the debate (`follow`), or one opened with
`ThreadSink.resume`, so replaying the whole stream posts nothing twice. A front renders only the threads of the
workspaces it holds a lease on (`leases.WorkspaceLeases`: one front per workspace, so its platform budget is paced in
one process), and logs the end of a debate whose feed ended while the log still calls it running.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from bots.thread.keys import root_key
from bots.thread.leases import LEASE_S, SWEEP_S, WorkspaceLeases
from bots.thread.restart import Reach
from bots.thread.sink import ThreadSink
from orchestrator.app import renderer_name
from orchestrator.events import (
    FINAL_EVENTS,
    DebateCancelled,
    DebateFailed,
    DebateFinished,
    EventBase,
    until_written,
)
from orchestrator.log import DebateLog
from orchestrator.models import MAX_CONTINUATIONS, DebateStatus, Outcome

log = logging.getLogger(__name__)

NO_RESULT = "the debate stopped without a result"
CANCELLED = "CANCELLED"  # DBOS's status of a workflow a stop reached
RETRY_SECONDS = (0.5, 30.0)  # a feed that broke (database unreachable) is read again after this, doubling
STARTING_GRACE_S = 10.0  # a debate found live before its workflow was queued: how long it may take
START_LIMIT_S = 120.0  # a debate admitted this long ago with no root message: its front stopped starting it
START_CUT_OFF = ("Debate failed: the bot stopped while starting it, before its thread was opened "
                 "(start it again).")
ROOT_KEYS = tuple(root_key(segment) for segment in range(1, MAX_CONTINUATIONS + 2))


class Feed(Protocol):
    """Where a debate's events come from, each once, ending with its final event or earlier. Raises
    LookupError for a debate it does not know. `segment` 2, 3, …: a continuation's events (asked only
    of debates that were continued)."""

    def events(self, debate_id: str, offset: int = 0, segment: int = 1) -> AsyncIterator[EventBase]: ...

    async def cancel(self, debate_id: str, segment: int = 1) -> str | None:
        """Stop the segment's workflow; its status once stopped (CANCELLED, or how it had ended first),
        None when unknown."""


class FrontTailer:
    """`reach(record)` returns a surface able to write the debate's thread (and its root), and the pacer
    it shares, or None when the front can no longer reach it. `renderer`: this front's name in the
    leases, unique among running fronts and stable across restarts (default `renderer_name()`, from the
    host). `owns(workspace)`: the workspaces this front may render (default: all)."""

    def __init__(self, feed: Feed, store: DebateLog, platform: str, reach: Reach, *, renderer: str | None = None,
                 owns: Callable[[str], bool] | None = None, lease_s: float = LEASE_S,
                 sweep_s: float = SWEEP_S) -> None:
        self.feed = feed
        self.store = store
        self.platform = platform
        self.reach = reach
        self.leases = WorkspaceLeases(store, platform, renderer or renderer_name(),
                                      owns or (lambda _workspace: True), lease_s)
        self.sweep_s = sweep_s
        self._following: dict[str, tuple[ThreadSink, asyncio.Task[None]]] = {}
        self._stopping: set[str] = set()
        self._sweeper: asyncio.Task[None] | None = None
        self._born = time.time()  # debates logged before this front began and without a workflow are orphans

    @property
    def renderer(self) -> str:
        return self.leases.renderer

    @property
    def lease_s(self) -> float:
        return self.leases.lease_s

    @lease_s.setter
    def lease_s(self, value: float) -> None:
        self.leases.lease_s = value

    @property
    def held(self) -> set[str]:
        """The workspaces whose threads this front renders (as of its last claim)."""
        return self.leases.held

    def follow(self, debate_id: str, sink: ThreadSink) -> asyncio.Task[None]:
        """Render `debate_id`'s events (those of the sink's segment) into `sink` until its thread is
        finished, if this front holds (or can take) the debate's workspace; else the sink is closed and
        the holder renders the thread. A debate followed already (a sweep found it first) keeps its
        sink: `sink` is closed. The task never raises."""
        entry = self._following.get(debate_id)
        if entry is not None and not entry[1].done():
            closing = asyncio.ensure_future(sink.aclose())
            return asyncio.ensure_future(_after(closing, entry[1]))
        task = asyncio.create_task(self._follow(debate_id, sink), name=f"tail-{debate_id}")
        self._following[debate_id] = (sink, task)
        task.add_done_callback(lambda _t: self._forget(debate_id, task))
        return task

    def sink(self, debate_id: str) -> ThreadSink | None:
        entry = self._following.get(debate_id)
        return None if entry is None else entry[0]

    @property
    def following(self) -> list[str]:
        return list(self._following)

    async def follow_segment(self, debate_id: str, segment: int) -> asyncio.Task[None] | None:
        """Render segment `segment` of the debate (a continuation) into its thread, reached from the log
        as at a restart; None when the thread cannot be reached (the continuation runs all the same).
        A sink still finishing the segment before is let finish first."""
        entry = self._following.get(debate_id)
        if entry is not None:
            await asyncio.gather(entry[1], return_exceptions=True)
        sink = await self._resumed_sink(debate_id, segment)
        return None if sink is None else self.follow(debate_id, sink)

    async def start(self) -> list[str]:
        """The first sweep (before the front takes requests), then one every `sweep_s` until `aclose`;
        returns the debates the first sweep began following."""
        resumed = await self.sweep()
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep_forever(), name=f"tail-sweep-{self.platform}")
        return resumed

    async def resume(self) -> list[str]:
        """One sweep, without the timer (`start` runs both): the threads of held workspaces followed."""
        return await self.sweep()

    async def sweep(self) -> list[str]:
        """Renew this front's leases and take the workspaces of live threads that are free or ran out;
        stop rendering the workspaces it lost; follow every live thread of the workspaces it holds, each
        from the start of its last segment. Returns the debates it began following."""
        live = await self.store.live_threads(self.platform, ROOT_KEYS)
        await self.leases.renew(lambda: {workspace for _id, workspace in live if self.leases.owns(workspace)}
                                | {_workspace(sink) for sink, _task in self._following.values()})
        await self._let_go([debate_id for debate_id, (sink, _task) in list(self._following.items())
                            if not self.leases.holds(_workspace(sink))])
        resumed = []
        for debate_id, workspace in live:
            if not self.leases.holds(workspace) or debate_id in self._following:
                continue
            try:
                sink = await self._resumed_sink(debate_id)
            except LookupError:  # admitted, its root not posted yet: the front starting it follows it …
                await self._end_unstarted(debate_id)  # … unless that front stopped
                continue
            except Exception:
                log.warning("%s: could not resume the thread of debate %s", self.platform, debate_id, exc_info=True)
                continue
            if sink is None:
                await self._end_unstarted(debate_id, threadless=True)  # perhaps no thread was ever recorded
                continue
            if debate_id in self._following:  # started or resumed meanwhile
                await sink.aclose()
                continue
            self.follow(debate_id, sink)
            resumed.append(debate_id)
        return resumed

    async def stop(self, debate_id: str) -> Outcome | None:
        """Cancel the debate's workflow, log it cancelled and show that in its thread. One answer wins a
        stop racing the debate's end: the workflow's. Cancelled (the stop reached it first), the log says
        cancelled too, even over an end its last step logged meanwhile; ended first, its own end stands.
        Returns the outcome that won (its `status` is what to tell the user), None for a debate the log
        does not know."""
        self._stopping.add(debate_id)
        sink = self.sink(debate_id)
        if sink is not None:
            segment = sink.segment
        else:
            record = await self.store.get_debate(debate_id, turns=False)
            segment = 1 if record is None else record.segment
        status = await (self.feed.cancel(debate_id) if segment == 1 else self.feed.cancel(debate_id, segment))
        if status not in (None, CANCELLED):  # it ended before the stop reached it: that end is the answer
            self._stopping.discard(debate_id)
            return await self._logged(debate_id)
        outcome = await self._end(debate_id, "cancelled", None, over_an_end=status == CANCELLED)
        sink = self.sink(debate_id)
        if outcome is not None and sink is not None:
            await sink.handle(DebateCancelled(debate_id=debate_id, outcome=outcome))
        return outcome if outcome is not None else await self._logged(debate_id)

    async def _logged(self, debate_id: str) -> Outcome | None:
        """How the log says the debate ended (or that it runs), as an Outcome; None when it is unknown."""
        record = await self.store.get_debate(debate_id, turns=False)
        if record is None:
            return None
        return Outcome(status=record.status, rounds_completed=record.rounds_completed,
                       rounds_planned=record.rounds_planned, input_tokens=record.input_tokens,
                       output_tokens=record.output_tokens, cost_usd=record.cost_usd, warnings=record.warnings,
                       error=record.error)

    async def idle(self) -> None:
        """Until every followed debate's thread is finished."""
        while self._following:
            await asyncio.wait([task for _sink, task in list(self._following.values())])

    async def aclose(self, *, release: bool = True) -> None:
        """Stop following (a restarted front resumes the threads; what is being written lands), then let
        go of every workspace so another front takes its threads over at once. `release=False` leaves
        the leases to run out, as a front that died does."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None
        await self._let_go(list(self._following))
        await self.leases.release(tell_log=release)

    def _forget(self, debate_id: str, task: asyncio.Task[None]) -> None:
        if (entry := self._following.get(debate_id)) is not None and entry[1] is task:
            del self._following[debate_id]
        self._stopping.discard(debate_id)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_s)
            try:
                await self.sweep()
            except Exception:
                log.warning("%s: renewing the thread leases failed; again in %.1f s", self.platform, self.sweep_s,
                            exc_info=True)

    async def _let_go(self, debate_ids: list[str]) -> None:
        """Stop rendering these debates here, their threads as they are (another front, or a restart,
        finishes them from the log)."""
        entries = [entry for debate_id in debate_ids if (entry := self._following.get(debate_id)) is not None]
        for _sink, task in entries:
            task.cancel()
        await asyncio.gather(*(task for _sink, task in entries), return_exceptions=True)
        for sink, _task in entries:
            await sink.aclose()

    async def _resumed_sink(self, debate_id: str, segment: int | None = None) -> ThreadSink | None:
        """A sink for the thread of the debate's `segment` (None: its last), or None when unreachable."""
        record = await self.store.get_debate(debate_id, turns=False)
        if record is None or record.spec is None:
            return None
        reached = await self.reach(record)
        if reached is None:
            log.info("%s: debate %s can no longer be reached; its thread stays as it is", self.platform, debate_id)
            return None
        surface, pacer = reached
        return await ThreadSink.resume(surface, pacer, self.store, record.spec,
                                       segment=record.segment if segment is None else segment)

    async def _follow(self, debate_id: str, sink: ThreadSink) -> None:
        """Render the debate into `sink` while this front holds its workspace. A feed that ends with the debate
        failed, or without a final event, while the log still calls it running gets that failure logged here,
        and the thread shows what the log says."""
        try:
            if not await self.leases.hold(_workspace(sink)):
                log.info("%s: another front renders the threads of debate %s's workspace", self.platform, debate_id)
                await sink.aclose()
                return
            if await self._read(debate_id, sink):
                await self._settle(debate_id, sink.outcome)
            elif debate_id not in self._stopping:
                outcome = await self._end(debate_id, "failed", NO_RESULT)
                if outcome is None:  # it ended in the log: show that
                    outcome = await self._logged(debate_id)
                if outcome is not None:
                    await sink.handle(_final(debate_id, outcome))
            await sink.wait_closed()
        except Exception:
            log.exception("%s: following debate %s failed", self.platform, debate_id)
            await sink.aclose()

    async def _read(self, debate_id: str, sink: ThreadSink) -> bool:
        """Feed the sink until the debate's final event (True) or the end of its events (False). A feed
        that breaks is read again from the start (the sink takes repeats), until it works."""
        delay = RETRY_SECONDS[0]
        # segment 1 is asked for as before continuations existed: a feed that has none still serves
        events = (lambda: self.feed.events(debate_id)) if sink.segment == 1 else (
            lambda: self.feed.events(debate_id, segment=sink.segment))
        starting: float | None = None  # monotonic: until when a missing workflow may still be on its way
        while True:
            try:
                async for event in events():
                    await sink.handle(event)
                    if isinstance(event, FINAL_EVENTS):
                        return True
                return False
            except LookupError:
                if starting is None:
                    starting = time.monotonic() + (STARTING_GRACE_S if await self._may_be_starting(sink) else 0.0)
                if time.monotonic() >= starting:
                    log.warning("%s: debate %s has no workflow to follow", self.platform, debate_id)
                    return False
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_SECONDS[1])
            except Exception:
                log.warning("%s: reading the events of debate %s failed; again in %.1f s", self.platform,
                            debate_id, delay, exc_info=True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_SECONDS[1])

    async def _settle(self, debate_id: str, outcome: Outcome | None) -> None:
        """The stream ended the debate failed: when the log still calls it running (its worker could not
        write the failure: the log was locked or full), write it here, retrying until the log accepts it,
        so the debate holds no quota slot and the thread is not resumed again and again."""
        if outcome is None or outcome.status != "failed":
            return

        async def write() -> None:
            record = await self.store.get_debate(debate_id, turns=False)
            if record is not None and record.status == "running":
                await self.store.finish_debate(debate_id, outcome)

        await until_written(write, f"{self.platform}: logging the failure of debate {debate_id}")

    async def _end_unstarted(self, debate_id: str, *, threadless: bool = False) -> None:
        """A running debate whose root was never recorded: a front admitted it and stopped (killed, or stuck)
        before its thread was opened. Once no front can still be starting it (logged before this front
        began, or START_LIMIT_S ago: `bots.thread.start` gives up by then), it ends failed and frees its
        slots. The log ends it only while it still has no root (`fail_unstarted`), so a slow start that
        records its root meanwhile keeps it, or, finding it ended, withdraws. `threadless`: only one with no
        thread recorded (one this front cannot reach for another reason is left as it is)."""
        record = await self.store.get_debate(debate_id, turns=False)
        if record is None or record.status != "running" or (threadless and record.thread is not None):
            return
        if record.created_at >= self._born and time.time() - record.created_at < START_LIMIT_S:
            return
        try:
            if await self.store.fail_unstarted(debate_id, START_CUT_OFF):
                log.warning("%s: debate %s was admitted and never started (its front stopped); ended failed",
                            self.platform, debate_id)
        except Exception:
            log.warning("%s: could not end debate %s, left unstarted; again at the next sweep", self.platform,
                        debate_id, exc_info=True)

    async def _may_be_starting(self, sink: ThreadSink) -> bool:
        """Whether a debate with no workflow yet may be being started by a front (its root is posted and
        recorded just before it is queued): a continuation, or a debate logged since this front began.
        One logged before (by a version without workflows, or a front that died starting it) is not."""
        record = await self.store.get_debate(sink.spec.id, turns=False)
        return record is not None and (sink.segment > 1 or record.created_at >= self._born)

    async def _end(self, debate_id: str, status: DebateStatus, error: str | None, *,
                   over_an_end: bool = False) -> Outcome | None:
        """Log the end of a debate the log still calls running (`over_an_end`: or ended otherwise than
        `status`: the workflow was cancelled after its last step logged its end), with what its turns
        used; None when it is not (ended already, or unknown)."""
        record = await self.store.get_debate(debate_id, turns=False)
        if record is None or record.status == status or (record.status != "running" and not over_an_end):
            return None
        await self.store.finish_debate(debate_id, Outcome(
            status=status, rounds_completed=record.rounds_completed, rounds_planned=record.rounds_planned, error=error))
        ended = await self.store.get_debate(debate_id, turns=False)  # the tokens, summed over its turns
        assert ended is not None
        return Outcome(status=ended.status, rounds_completed=ended.rounds_completed,
                       rounds_planned=ended.rounds_planned, input_tokens=ended.input_tokens,
                       output_tokens=ended.output_tokens, cost_usd=ended.cost_usd, error=error)


def stop_answer(debate_id: str, outcome: Outcome | None) -> str:
    """What the user who asked for a stop is told: the answer that won (`FrontTailer.stop`)."""
    if outcome is None or outcome.status in ("cancelled", "running"):
        return f"Stopping debate `{debate_id}`; its thread will say it was cancelled."
    if outcome.status == "completed":
        return f"Debate `{debate_id}` had already ended with its verdict; its thread shows it."
    return f"Debate `{debate_id}` had already ended ({outcome.status}); its thread says how."


async def _after(first: asyncio.Future[None], then: asyncio.Task[None]) -> None:
    await asyncio.gather(first, then, return_exceptions=True)


def _workspace(sink: ThreadSink) -> str:
    return sink.spec.workspace or ""


def _final(debate_id: str, outcome: Outcome) -> EventBase:
    if outcome.status == "completed":
        return DebateFinished(debate_id=debate_id, outcome=outcome)
    if outcome.status == "cancelled":
        return DebateCancelled(debate_id=debate_id, outcome=outcome)
    return DebateFailed(debate_id=debate_id, outcome=outcome)
