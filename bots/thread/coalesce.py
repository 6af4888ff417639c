"""Latest text wins: every write renders its message only when the pacer lets it go.

`Paced` is how the thread code writes through a surface: it waits for the pacer's slot, then calls the
render function it was given, then makes the call. A write that waited long therefore carries the
newest text, and an edit whose render finds nothing new (None) makes no call. `Latest` keeps one message
(a root's status) showing the newest state set on it: a state still waiting when a newer one is set is
never sent, and the last one set always lands. A write that has started is run to completion even if
its caller is cancelled (`run_to_completion`). Once a debate is stopped (`withhold`), no new message is
posted but the one that says so (`after_stop`); edits that finish a message already posted still land.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from bots.thread.intents import PostIntents
from bots.thread.pacing import Pacer, Urgency
from bots.thread.surface import Keyed, M, Surface

log = logging.getLogger(__name__)
T = TypeVar("T")
POST_ATTEMPTS = 3  # a keyed post that failed is looked for, and made again, up to this many times in all
POST_RETRY_S = 0.25  # the pause before the second attempt, doubling


async def run_to_completion(write: Awaitable[T]) -> T:
    """Await a write that has started; if the caller is cancelled meanwhile, finish it first, then re-raise.

    A write abandoned halfway can orphan a message or wedge the platform client: cancelling a task inside
    discord.py's `HTTPClient.request` can leave that route's rate-limit bucket without its wake-up (a
    cancel landing in `Ratelimit._refresh`), and the next request on the route then waits up to 30 s. The
    caller is held for at most the one request in flight.
    """
    task = asyncio.ensure_future(write)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                continue  # cancelled again: still let the write finish; the first cancel is re-raised below
        raise


class Withheld(Exception):
    """A post not made: the debate was stopped, and its thread gets only the notice that says so."""


Record = Callable[[str, bool], Awaitable[None]]  # (message id, whether this post made it: False, found)


class Paced(Generic[M]):
    """A surface's writes, paced by `pacer` and rendered late. With `intents`, a post given a `key` is
    announced in the log first, and one an earlier post of the key left behind is found, not made again."""

    def __init__(self, surface: Surface[M], pacer: Pacer, intents: PostIntents | None = None) -> None:
        self.surface = surface
        self.pacer = pacer
        self.intents = intents
        self.withheld = False

    def withhold(self) -> None:
        """From now on post nothing new (but what is posted `after_stop`): the debate was stopped."""
        self.withheld = True

    def check(self, after_stop: bool = False) -> None:
        """Raise Withheld for a new message once the debate is stopped."""
        if self.withheld and not after_stop:
            raise Withheld

    def _channel(self, in_thread: bool) -> str:
        return self.surface.thread_channel if in_thread else self.surface.root_channel

    async def post(self, render: Callable[[], M], urgency: Urgency, *, in_thread: bool = True,
                   record: Record | None = None, key: str | None = None, after_stop: bool = False) -> str:
        """Post what `render` returns once the channel's turn comes; returns the message's id.
        `record(message_id, posted)` runs as part of the write: a post is never left unrecorded by a cancel.
        `key`: the message's key, for the intents (a message found instead is recorded with posted False).
        Raises Withheld, posting nothing, once the debate is stopped (unless `after_stop`)."""
        self.check(after_stop)
        channel = self._channel(in_thread)
        intents = self.intents if key is not None else None
        pause = POST_RETRY_S
        for attempt in range(POST_ATTEMPTS):
            if intents is not None and key is not None:
                found = await intents.before(key, in_thread=in_thread)
                if found is not None:
                    if record is not None:
                        await run_to_completion(record(found, False))
                    intents.posted(key)
                    return found
            try:
                async with self.pacer.posting(channel, urgency):
                    self.check(after_stop)  # stopped while this waited for the channel's turn
                    message_id = await run_to_completion(self._post(render(), in_thread, record, key))
            except Withheld:
                raise
            except Exception:
                # the post may have landed with its answer lost: where it can be found, look, then post again
                # (a platform that enforces the key gives back the message it took)
                if intents is None or not intents.keyed or attempt == POST_ATTEMPTS - 1:
                    raise
                log.warning("post of %s failed; looking for it before posting again", key, exc_info=True)
                await asyncio.sleep(pause)
                pause *= 2
                continue
            self.pacer.shown(channel, message_id)
            return message_id
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _post(self, message: M, in_thread: bool, record: Record | None, key: str | None) -> str:
        surface = self.surface
        if key is not None and self.intents is not None and isinstance(surface, Keyed):
            message_id = await surface.post_keyed(message, key, in_thread=in_thread)
        else:
            message_id = await surface.post(message, in_thread=in_thread)
        if record is not None:
            await record(message_id, True)
        if key is not None and self.intents is not None:
            self.intents.posted(key)
        return message_id

    async def edit(self, message_id: str, render: Callable[[], M | None], urgency: Urgency, *,
                   in_thread: bool = True) -> bool:
        """Edit to what `render` returns once the budgets allow; None skips the call. Returns whether it edited."""
        async with self.pacer.editing(self._channel(in_thread), message_id, urgency):
            message = render()
            if message is None:
                return False
            await run_to_completion(self.surface.edit(message_id, message, in_thread=in_thread))
        return True


class Latest(Generic[M]):
    """Keeps one message showing the newest state set on it, as fast as its budgets allow.

    `set` never waits. While an edit waits for its slot, a newer state replaces the older one, which is
    then never sent: with many debates in one channel, progress edits coalesce instead of queueing. A
    state set more urgently than the one waiting queues again at its urgency. `flush` waits until the
    last state set has landed (or failed, which is logged).
    """

    def __init__(self, out: Paced[M], message_id: str, *, in_thread: bool) -> None:
        self.out = out
        self.message_id = message_id
        self.in_thread = in_thread
        self.dropped = 0  # states replaced before they were written
        self.failed = False  # the last write made failed (the message may not show the newest state)
        self._pending: tuple[Urgency, Callable[[], M]] | None = None
        self._waiting_at: Urgency | None = None  # the urgency the writer is queued with, while it is queued
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def set(self, render: Callable[[], M], urgency: Urgency = Urgency.STATUS) -> None:
        if self._closed:
            return
        if self._pending is not None:
            self.dropped += 1
        self._pending = (urgency, render)
        if self._task is not None and not self._task.done():
            if self._waiting_at is None or urgency >= self._waiting_at:
                return  # the running writer picks the new state up when its slot comes
            self._task.cancel()  # queued behind less urgent work: queue again at this urgency
            self._waiting_at = None
        self._task = asyncio.create_task(self._run(), name=f"latest-{self.message_id}")

    async def flush(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    async def aclose(self) -> None:
        """Set nothing more; a state still waiting is dropped, one being written lands."""
        self._closed = True
        task = self._task
        if task is not None:
            if self._waiting_at is not None:
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _take(self) -> M:
        assert self._pending is not None
        self._waiting_at = None
        _urgency, render = self._pending
        self._pending = None
        return render()

    async def _run(self) -> None:
        while self._pending is not None:
            self._waiting_at = self._pending[0]
            try:
                await self.out.edit(self.message_id, self._take, self._waiting_at, in_thread=self.in_thread)
            except Exception:
                self.failed = True
                log.warning("could not edit message %s", self.message_id, exc_info=True)
            else:
                self.failed = False
