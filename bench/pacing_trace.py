"""What bench.pacing needs beside its two platforms: the in-process engine as a front's feed, where each
turn's text was when, and the floor a channel's write limit sets.

- `EngineFeed`: the front's `Feed` with the debates run by the engine in this process (no DBOS, text every
  50 ms), as the bots ran them before debates were durable: the same front, sink and pacer, fed at once.
- `Trace`: when each text delta was written to the workflow's stream (a worker in this process) and when the
  front handed it to the thread's sink, so a turn's first-text delay splits into model → stream → front →
  platform.
- `Delays`: per turn, when its first text was made, written, read and shown, and the floor of its delay.
- `floor`: the earliest each first text can show when a channel takes `writes` per `window` and the first
  texts are served in the order their model produced them (any other order only moves the last one later),
  around the posts the channel carried anyway (Slack: the debates' root posts).
"""

from __future__ import annotations

import asyncio
import bisect
import re
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from bench.llm_peer import ReplyPlan
from orchestrator.app import Core
from orchestrator.debate.jobs import DebateJobs
from orchestrator.events import FINAL_EVENTS, EventBase, TextDelta
from orchestrator.models import DebateSpec

TurnAt = tuple[str, int, str, str]  # debate id, round, seat, kind
PROBE_WORDS = 6  # "first visible text": a turn's first six words show (bench.pacing's probe)


class _Queued:
    def __init__(self, queue: asyncio.Queue[EventBase]) -> None:
        self.queue = queue

    async def handle(self, event: EventBase) -> None:
        self.queue.put_nowait(event)


class EngineFeed:
    """A front's feed whose debates run in this process (`DebateJobs`): events reach the sink as emitted."""

    def __init__(self) -> None:
        self.core: Core | None = None
        self.jobs: DebateJobs | None = None
        self._queues: dict[str, asyncio.Queue[EventBase]] = {}

    def bind(self, core: Core) -> None:
        self.core = core
        self.jobs = DebateJobs(core.engine, core.store, max_concurrent=core.settings.debate_max_concurrent)

    async def enqueue(self, spec: DebateSpec, request_key: str | None = None) -> str:
        assert self.jobs is not None, "bind the feed to its core first"
        queue = self._queues.setdefault(spec.id, asyncio.Queue())
        self.jobs.start(spec, [_Queued(queue)])
        return spec.id

    async def events(self, debate_id: str, offset: int = 0, segment: int = 1) -> AsyncIterator[EventBase]:
        queue = self._queues.get(debate_id)
        if queue is None:
            raise LookupError(debate_id)
        while True:
            event = await queue.get()
            yield event
            if isinstance(event, FINAL_EVENTS):
                return

    async def cancel(self, debate_id: str, segment: int = 1) -> None:
        if self.jobs is not None:
            self.jobs.cancel(debate_id)

    async def close(self) -> None:
        if self.jobs is not None:
            await self.jobs.shutdown()


@contextmanager
def engine_feed(on: bool = True) -> Iterator[EngineFeed]:
    """A front (`Core.open(..., "front")`) opened inside gets an `EngineFeed` instead of the workers' stream;
    `bind` it to the core once open. `on` False: nothing changes."""
    from orchestrator.durable import FrontFeed

    feed = EngineFeed()
    if not on:
        yield feed
        return

    async def open_feed(_settings: Any) -> EngineFeed:
        return feed

    with mock.patch.object(FrontFeed, "open", open_feed):
        yield feed


class Trace:
    """Per turn, (time, text length so far) each time its text grew: in the stream (`written`), at the
    front's sink (`read`). Times are CLOCK_MONOTONIC, the LLM peer's and the platform peers' clock."""

    def __init__(self) -> None:
        self.written: dict[TurnAt, list[tuple[float, int]]] = defaultdict(list)
        self.read: dict[TurnAt, list[tuple[float, int]]] = defaultdict(list)

    @staticmethod
    def _note(into: dict[TurnAt, list[tuple[float, int]]], event: EventBase) -> None:
        if isinstance(event, TextDelta):
            into[(event.debate_id, event.round, event.seat, event.kind)].append(
                (time.monotonic(), event.offset + len(event.delta)))

    @contextmanager
    def installed(self) -> Iterator[Trace]:
        from bots.thread.sink import ThreadSink
        from orchestrator.durable.workflow import StreamSink

        read, written = ThreadSink.handle, StreamSink.handle

        async def on_read(sink: ThreadSink, event: EventBase) -> None:
            self._note(self.read, event)
            await read(sink, event)

        async def on_written(sink: StreamSink, event: EventBase) -> None:
            await written(sink, event)
            self._note(self.written, event)

        with mock.patch.object(ThreadSink, "handle", on_read), mock.patch.object(StreamSink, "handle", on_written):
            yield self

    @staticmethod
    def reached(seen: Sequence[tuple[float, int]], length: int) -> float | None:
        """When the turn's text first held `length` characters."""
        return next((at for at, end in seen if end >= length), None)


def probe_length(text: str) -> int:
    """How much of a turn's text holds its first PROBE_WORDS words (all of it, if shorter)."""
    match = re.match(rf"\s*(?:\S+\s+){{{PROBE_WORDS - 1}}}\S+", text)
    return match.end() if match else len(text)


def floor(arrivals: Sequence[float], writes: int, window: float, occupied: Sequence[float] = ()) -> list[float]:
    """Each arrival's earliest write in a channel taking `writes` per `window` (a write counted from when
    it went), served in arrival order; returned as delays, in the arrivals' order. `occupied`: writes the
    channel carried anyway, at the times they went (a debate's root post, which its text cannot precede);
    one write per window only."""
    if occupied and writes != 1:
        raise ValueError("writes the channel carried anyway are counted for one write per window only")
    order = sorted(range(len(arrivals)), key=lambda i: arrivals[i])
    taken = sorted(occupied)  # with `occupied`: every write so far, the arrivals' too
    went: list[float] = []
    delays = [0.0] * len(arrivals)
    for i in order:
        at = arrivals[i]
        if len(went) >= writes:
            at = max(at, went[-writes] + window)
        if occupied:
            at = _free_slot(at, taken, window)
        went.append(at)
        delays[i] = at - arrivals[i]
    return delays


def _free_slot(at: float, taken: list[float], window: float) -> float:
    """The earliest time from `at` at least `window` from every write in `taken` (sorted), which it joins."""
    for other in taken:
        if other - window < at < other + window:
            at = other + window
    bisect.insort(taken, at)
    return at


@dataclass
class Delays:
    """Per turn whose first text showed: when its model had the probe's words, when the stream had them
    (serve), when the front's sink had them, when the platform showed them; and which channel it went to."""

    model: list[float] = field(default_factory=list)
    written: list[float | None] = field(default_factory=list)
    read: list[float | None] = field(default_factory=list)
    shown: list[float] = field(default_factory=list)
    channels: list[str] = field(default_factory=list)

    def add(self, started: float, plan: ReplyPlan, trace: Trace, at: tuple[str, int, str, str], text: str,
            shown: float, channel: str) -> None:
        length = probe_length(text)
        self.model.append(started + (PROBE_WORDS - 1) / plan.tokens_per_s)
        self.written.append(trace.reached(trace.written.get(at, []), length))
        self.read.append(trace.reached(trace.read.get(at, []), length))
        self.shown.append(shown)
        self.channels.append(channel)

    @property
    def total(self) -> list[float]:
        return [s - m for s, m in zip(self.shown, self.model, strict=True)]

    def floor(self, writes: int, window: float, occupied: Mapping[str, list[float]] | None = None) -> list[float]:
        """The floor of each turn's delay: every channel's first texts served in order at its limit, around
        the writes each channel carried anyway (`occupied`, by channel)."""
        out = [0.0] * len(self.model)
        for channel in set(self.channels):
            index = [i for i, c in enumerate(self.channels) if c == channel]
            arrivals = [self.model[i] for i in index]
            for i, delay in zip(index, floor(arrivals, writes, window, (occupied or {}).get(channel, [])), strict=True):
                out[i] = delay
        return out

    def legs(self) -> dict[str, list[float]]:
        """The delay split: model → stream, stream (or model) → the front's sink, sink → shown."""
        to_stream = [w - m for w, m in zip(self.written, self.model, strict=True) if w is not None]
        to_front = [r - (w if w is not None else m) for r, w, m in zip(self.read, self.written, self.model, strict=True)
                    if r is not None]
        to_shown = [s - r for s, r in zip(self.shown, self.read, strict=True) if r is not None]
        return {"model → stream write": to_stream, "→ the front's sink": to_front, "sink → shown": to_shown}
