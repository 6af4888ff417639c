"""The live page: what a front streams to the browsers following a running debate.

One watch per debate per front, shared by all its viewers (`LiveHub.follow`): it reads the debate from
the log (shared by every front, so any front behind a load balancer serves any viewer) and, when the
front has a workflow feed, from the debate's event stream too. A stream event wakes the watch at once
(the log is written before the event is streamed) and text deltas show the turn being written; the
log is also read every `poll_s`, which alone keeps the page within about a second of the thread for a
debate with no stream (`debate run`). Each change is rendered once and sent to every viewer:
("main", html) for the log's view of the debate, ("live", json) for a turn still being written,
("end", "") once the debate has settled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

from bots.page.keys import LinkedDebates
from bots.page.render import render_live_turn, render_main
from bots.page.view import PageView, page_fingerprint, page_view
from orchestrator.events import EventBase, TextDelta, TurnCompleted, TurnFailed, TurnStarted
from orchestrator.log.records import DebateRecord

log = logging.getLogger(__name__)

POLL_S = 0.5
LIVE_EVERY_S = 0.25  # a streaming turn is re-rendered at most this often
HEARTBEAT_S = 15.0  # a quiet stream says it is alive this often (proxies close idle connections)
QUEUE_MAX = 64  # a viewer this far behind is dropped (its browser reconnects and starts over)
Message = tuple[str, str]


def _key(round: int, seat: str, kind: str) -> str:
    return f"{round}:{seat}:{kind}"


class Feed(Protocol):
    def events(self, debate_id: str, offset: int = 0, segment: int = 1) -> AsyncIterator[EventBase]: ...


@dataclass
class _Writing:
    seat: str
    kind: str
    model: str
    attempt: str = ""
    text: str = ""
    shown: float = 0.0


@dataclass
class _Watch:
    debate_id: str
    viewers: set[asyncio.Queue[Message]] = field(default_factory=set)
    main: str | None = None
    view: PageView | None = None
    writing: dict[str, _Writing] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)  # turns the log has: a replayed stream's deltas for them are old
    stale: bool = False  # a turn ended on the stream: show the log's view even if it looks unchanged
    woken: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    ended: bool = False

    def send(self, message: Message) -> None:
        for queue in list(self.viewers):
            try:
                queue.put_nowait(message)
            except asyncio.QueueFull:  # the viewer's stream ends once it has read what it holds
                self.viewers.discard(queue)


class LiveHub:
    """Watches of the running debates this front's viewers follow; a watch ends with its last viewer."""

    def __init__(self, store: LinkedDebates, feed: Callable[[], Feed | None] = lambda: None, *,
                 poll_s: float = POLL_S) -> None:
        self.store = store
        self.feed = feed
        self.poll_s = poll_s
        self._watches: dict[str, _Watch] = {}

    @property
    def watching(self) -> int:
        return len(self._watches)

    async def follow(self, debate_id: str, *, heartbeat_s: float = HEARTBEAT_S) -> AsyncIterator[Message]:
        """What changes on the debate's page, from now until it settles (or the viewer leaves); ("ping", "")
        after `heartbeat_s` without a change."""
        watch = self._watches.get(debate_id)
        if watch is None or watch.ended:
            watch = self._watches[debate_id] = _Watch(debate_id)
            watch.task = asyncio.create_task(self._run(watch), name=f"page-watch-{debate_id}")
        queue: asyncio.Queue[Message] = asyncio.Queue(QUEUE_MAX)
        if watch.main is not None:  # what it shows now: the page may have been rendered before the last change
            queue.put_nowait(("main", watch.main))
        watch.viewers.add(queue)
        try:
            while queue in watch.viewers or not queue.empty():
                try:
                    message = await asyncio.wait_for(queue.get(), heartbeat_s)
                except TimeoutError:
                    message = ("ping", "")
                yield message
                if message[0] == "end":
                    return
        finally:
            watch.viewers.discard(queue)
            if not watch.viewers and self._watches.get(debate_id) is watch:
                del self._watches[debate_id]
                if watch.task is not None and not watch.ended:
                    watch.task.cancel()

    async def close(self) -> None:
        for watch in list(self._watches.values()):
            if watch.task is not None:
                watch.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch.task
        self._watches.clear()

    async def _run(self, watch: _Watch) -> None:
        streaming: asyncio.Task[None] | None = None
        try:
            seen: tuple[object, ...] | None = None
            while True:
                record = await self.store.debate(watch.debate_id)
                if record is None or record.id != watch.debate_id:
                    break
                # again while its workflow is not queued yet (a page opened as the debate starts)
                unqueued = streaming is not None and streaming.done() and streaming.result() is False
                if (streaming is None or unqueued) and record.status == "running":
                    streaming = asyncio.create_task(self._stream(watch, record.segment))
                if (fingerprint := page_fingerprint(record)) != seen or watch.stale:
                    seen, watch.stale = fingerprint, False
                    self._show(watch, record)
                if record.status not in ("pending", "running"):
                    break
                watch.woken.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(watch.woken.wait(), self.poll_s)
        except Exception:  # the log could not be read: the viewers' browsers reconnect and start over
            log.warning("page: the watch of debate %s failed", watch.debate_id, exc_info=True)
        finally:
            if streaming is not None:
                streaming.cancel()
            watch.ended = True
            watch.send(("end", ""))

    def _show(self, watch: _Watch, record: DebateRecord) -> None:
        watch.view = page_view(record)
        watch.done = {_key(t.round, t.seat, t.kind) for t in record.turns}
        for key in [k for k in watch.writing if k in watch.done]:
            del watch.writing[key]
        watch.main = render_main(watch.view)
        watch.send(("main", watch.main))
        for key, writing in watch.writing.items():  # the turns still being written, back in the new <main>
            self._send_live(watch, key, writing)

    def _send_live(self, watch: _Watch, key: str, writing: _Writing) -> None:
        if watch.view is None:
            return
        html = render_live_turn(watch.view, key, writing.seat, writing.kind, writing.model, writing.text)
        watch.send(("live", json.dumps({"key": key, "html": html})))
        writing.shown = time.monotonic()

    async def _stream(self, watch: _Watch, segment: int) -> bool:
        """Follows the debate's event stream; False when it has no workflow (yet, or a `debate run` debate)."""
        feed = self.feed()
        if feed is None:
            return True
        try:
            async for event in feed.events(watch.debate_id, 0, segment):
                if isinstance(event, TurnStarted | TextDelta):
                    if _key(event.round, event.seat, event.kind) not in watch.done:
                        self._writing(watch, event)
                    continue
                if isinstance(event, TurnCompleted | TurnFailed):
                    ended = _key(event.turn.round, event.turn.seat, event.turn.kind)
                    watch.stale = watch.writing.pop(ended, None) is not None or watch.stale
                    watch.done.add(ended)
                watch.woken.set()
        except LookupError:  # no workflow behind it (not yet, or a `debate run` debate): the log shows it
            return False
        except Exception:
            log.warning("page: the stream of debate %s failed; reading the log only", watch.debate_id,
                        exc_info=True)
        return True

    def _writing(self, watch: _Watch, event: TurnStarted | TextDelta) -> None:
        key = _key(event.round, event.seat, event.kind)
        if isinstance(event, TurnStarted):
            watch.writing[key] = _Writing(event.seat, event.kind, event.model)
            return
        writing = watch.writing.setdefault(key, _Writing(event.seat, event.kind, ""))
        if event.attempt != writing.attempt:  # the model call ran again: its text starts over
            writing.attempt, writing.text = event.attempt, ""
        writing.text += event.delta
        if time.monotonic() - writing.shown >= LIVE_EVERY_S:
            self._send_live(watch, key, writing)
