"""Write pacing for one Slack workspace, shared by every debate streaming into it.

Slack allows about one chat.postMessage per second per channel, and chat.update is Tier 3: about 50
a minute for the whole workspace. The pacer makes writers wait their turn instead of collecting 429s:
posts are spaced per channel, updates draw from one token bucket, and an edit of a message waits
`edit_interval` after the previous one was answered. `min_edit_interval` grows with the number of
messages being edited at once, so LiveTurns coalesces harder when many debates stream together.

Both budgets are scarce when many debates stream at once, so waiting writers are not served in
arrival order but by `Urgency`, decided when the slot opens: a streaming turn's text goes before a
new debate's root message, and among edits the message that has gone longest without a visible
change goes first. A request's place in the queue is its time (for an edit of streamed text: when
its message last changed) plus a head start or handicap per urgency, counted in the budget's own
period, so no urgency is starved for long.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import IntEnum


class Urgency(IntEnum):
    """Who goes first when a channel's posts or the workspace's updates are scarce."""

    USER = 0  # the answer to someone's click or command: vote tallies, quotes
    TEXT = 1  # a streaming turn's text: its first post, continuations, edits
    REPLY = 2  # the rest of a thread: verdicts, notices, a debate's final status
    STATUS = 3  # a new debate's root message, progress on it


# How far a request is moved in its queue, in periods of that budget (one post interval for posts,
# window / updates for chat.update): negative goes ahead of older requests, positive behind newer ones.
POST_HANDICAP = {Urgency.USER: 0.0, Urgency.TEXT: 0.0, Urgency.REPLY: 10.0, Urgency.STATUS: 120.0}
UPDATE_HANDICAP = {Urgency.USER: -30.0, Urgency.TEXT: 0.0, Urgency.REPLY: 3.0, Urgency.STATUS: 30.0}
SHOWN_MEMORY = 10  # windows: how long the pacer remembers when a message last changed


@dataclass(frozen=True)
class PacingLimits:
    """Defaults sit a little under Slack's published limits, leaving room for clock jitter."""

    post_interval: float = 1.05  # seconds between posts in one channel
    updates: int = 45  # chat.update calls per `window` per workspace
    window: float = 60.0
    edit_interval: float = 1.0  # seconds between two edits of one message
    active_horizon: float = 5.0  # a message edited this recently counts as streaming
    # A turn's first message waits for its first text and then this long, so it opens with a phrase
    # rather than a word (None: half a post interval, which a channel's next post often waits anyway).
    first_post_grace: float | None = None
    placeholder_after: float = 8.0  # a turn still without text after this shows a placeholder

    @property
    def first_post_delay(self) -> float:
        return self.post_interval / 2 if self.first_post_grace is None else self.first_post_grace


class _Queue(ABC):
    """Grants waiting requests lowest key first, when `available()` allows; `grant()` spends one."""

    def __init__(self) -> None:
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()
        self._timer: asyncio.TimerHandle | None = None

    async def wait(self, key: float) -> None:
        """Until granted. A caller cancelled after its grant must give it back (`refund`)."""
        grant: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (key, next(self._arrivals), grant))
        self.pump()
        try:
            await grant
        except asyncio.CancelledError:
            if grant.done() and not grant.cancelled():
                self.refund()
            raise

    def pump(self) -> None:
        """Grant every waiter that may go now, best key first; look again when the next may."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._waiters:
            if self._waiters[0][2].done():  # cancelled while waiting
                heapq.heappop(self._waiters)
                continue
            delay = self.available()
            if delay > 0:
                self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)
                return
            if delay < 0:  # busy: whoever holds the budget pumps when done
                return
            _key, _arrival, grant = heapq.heappop(self._waiters)
            self.spend()
            grant.set_result(None)

    def _on_timer(self) -> None:
        self._timer = None
        self.pump()

    @abstractmethod
    def available(self) -> float:
        """0: one may go now; > 0: seconds until one may; < 0: not until something else happens."""

    @abstractmethod
    def spend(self) -> None:
        """A waiter was granted: take what it uses."""

    @abstractmethod
    def refund(self) -> None:
        """A granted waiter was cancelled before using its grant: give it back."""


class _ChannelPosts(_Queue):
    """One post at a time in a channel, each `interval` after the previous one was answered."""

    def __init__(self, interval: float) -> None:
        super().__init__()
        self.interval = interval
        self.busy = False
        self.free_at = float("-inf")

    def available(self) -> float:
        if self.busy:
            return -1.0
        return max(0.0, self.free_at - asyncio.get_running_loop().time())

    def spend(self) -> None:
        self.busy = True

    def refund(self) -> None:
        self.busy = False
        self.pump()

    def done(self) -> None:
        self.busy = False
        self.free_at = asyncio.get_running_loop().time() + self.interval
        self.pump()


class _UpdateBucket(_Queue):
    """`updates` chat.update calls per `window` seconds, refilled continuously."""

    def __init__(self, updates: int, window: float) -> None:
        super().__init__()
        self.capacity = float(updates)
        self.rate = updates / window
        self.tokens = float(updates)
        self.refilled_at: float | None = None

    def _refill(self) -> None:
        now = asyncio.get_running_loop().time()
        if self.refilled_at is not None:
            self.tokens = min(self.capacity, self.tokens + (now - self.refilled_at) * self.rate)
        self.refilled_at = now

    def available(self) -> float:
        self._refill()
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def spend(self) -> None:
        self.tokens -= 1

    def refund(self) -> None:
        self.tokens = min(self.capacity, self.tokens + 1)
        self.pump()


class Pacer:
    def __init__(self, limits: PacingLimits | None = None) -> None:
        self.limits = limits or PacingLimits()
        self._channels: dict[str, _ChannelPosts] = defaultdict(lambda: _ChannelPosts(self.limits.post_interval))
        self._last_edit: dict[str, float] = {}
        self._shown: dict[str, float] = {}  # message key -> when it last changed (posted or updated)
        self._updates = _UpdateBucket(self.limits.updates, self.limits.window)

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    @property
    def update_period(self) -> float:
        return self.limits.window / self.limits.updates

    @asynccontextmanager
    async def posting(self, channel: str, urgency: Urgency = Urgency.REPLY) -> AsyncIterator[None]:
        """Hold `channel`'s turn for one post: wait `post_interval` after the previous post was
        answered (so network jitter can never bunch two posts together at Slack's end), post, release.
        When several posts wait, the most urgent goes first (see the module docstring)."""
        posts = self._channels[channel]
        await posts.wait(self._now() + POST_HANDICAP[urgency] * self.limits.post_interval)
        try:
            yield
        finally:
            posts.done()

    def shown(self, message_key: str) -> None:
        """Record that `message_key` (`channel:ts`) just changed visibly: it was posted."""
        now = self._now()
        self._shown[message_key] = now
        if len(self._shown) > 256:
            horizon = now - SHOWN_MEMORY * self.limits.window
            for key in [k for k, at in self._shown.items() if at < horizon]:
                del self._shown[key]

    async def before_update(self, message_key: str, urgency: Urgency = Urgency.REPLY) -> None:
        """Wait until `message_key` may be edited again and the workspace has an update to spend.

        Streamed text (`Urgency.TEXT`) queues by when its message last changed, so the message that
        has shown nothing new for longest is edited first; other updates queue by arrival."""
        last = self._last_edit.get(message_key)
        if last is not None:
            wait = last + self.limits.edit_interval - self._now()
            if wait > 0:
                await asyncio.sleep(wait)
        since = self._shown.get(message_key, self._now()) if urgency == Urgency.TEXT else self._now()
        await self._updates.wait(since + UPDATE_HANDICAP[urgency] * self.update_period)
        self._last_edit[message_key] = self._shown[message_key] = self._now()

    def updated(self, message_key: str) -> None:
        """The update granted by `before_update` was answered: the next one waits `edit_interval`
        from now, so network jitter can never bunch two edits of a message together at Slack's end."""
        self._last_edit[message_key] = self._shown[message_key] = self._now()

    def streaming(self) -> int:
        """How many messages were edited within the last `active_horizon` seconds."""
        horizon = self._now() - self.limits.active_horizon
        stale = [key for key, at in self._last_edit.items() if at < horizon]
        for key in stale:
            del self._last_edit[key]
        return len(self._last_edit)

    def min_edit_interval(self) -> float:
        """The edit interval each streaming message should keep so all of them fit the budget."""
        share = max(1, self.streaming()) * self.limits.window / self.limits.updates
        return max(self.limits.edit_interval, share)


class Pacers:
    """One Pacer per workspace (team id); token mode has a single workspace."""

    def __init__(self, limits: PacingLimits | None = None) -> None:
        self.limits = limits or PacingLimits()
        self._by_team: dict[str, Pacer] = {}

    def for_team(self, team_id: str | None) -> Pacer:
        key = team_id or "-"
        if key not in self._by_team:
            self._by_team[key] = Pacer(self.limits)
        return self._by_team[key]
