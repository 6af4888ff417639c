"""One pacing model for every platform's writes, shared by every debate a `Pacer` serves.

A platform states its limits as a `Limits` (`bots.slack.surface.slack_limits`, `bots.discord.surface.discord_limits`);
the pacer makes writers wait their turn instead of collecting 429s, and when a budget is scarce it serves the most
urgent writes first (`Urgency`). `StreamLimits` adds a platform's native streams.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import IntEnum

from bots.thread.recency import Recency

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamLimits:
    """Native streams: `calls` starts and stops per `window` per workspace (a stream takes one of each; Slack's
    Tier 2), `appends` per `window` (Slack's Tier 4), and how old a stream may grow before it is stopped
    (`max_age`: under the platform's own close) and its message goes on by updates. A turn streams when a start
    is free, else it is posted and updated; a workspace's first refusal turns streams off there."""

    calls: int = 18
    window: float = 60.0
    appends: int = 90
    max_age: float = 270.0


class Urgency(IntEnum):
    """Who goes first when a budget is scarce; lower values are more urgent."""

    OPEN = 0  # opening a debate's thread: nothing of that debate can show before it
    USER = 1  # the answer to someone's click or command: vote tallies, quotes
    TEXT = 2  # a streaming turn's text: its first post, continuations, edits
    REPLY = 3  # the rest of a thread: verdicts, notices, a debate's final status
    STATUS = 4  # a new debate's root message, progress on it

    @staticmethod
    def even() -> dict[Urgency, float]:
        return dict.fromkeys(Urgency, 0.0)


STRICT = 1e6  # a handicap step no queue outlives: the urgencies it separates are strict priorities
SHOWN_MEMORY = 10  # edit windows: how long the pacer remembers when a message last changed
PRUNE_CHANNELS_AT = 64  # channel budgets a pacer keeps before it forgets those at rest (then twice what stays)


@dataclass(frozen=True)
class Limits:
    """A platform's write limits and how its threads spend them. Three budgets, each present or not per platform:
    **channel** (`channel_writes` per `channel_window` in one channel, counted from when a write was answered,
    writes in flight counting too: Slack's posts, every Discord write), **edits** (a token bucket of `edits` per
    `edit_window` for everything the pacer serves: Slack's chat.update per workspace) and **one message** (an edit
    waits `edit_interval` after the previous edit of that message).

    Waiting writes are served by `Urgency`, decided when a slot opens: a request's place is its time plus its
    urgency's handicap (`write_order`, `edit_order`, in budget periods). Small handicaps (Slack) only tilt the
    queue; far apart (Discord, `STRICT`) they make a strict priority."""

    channel_writes: int
    channel_window: float
    edit_interval: float
    edits_use_channel: bool = False
    edits: int | None = None
    edit_window: float = 60.0
    write_order: Mapping[Urgency, float] = field(default_factory=Urgency.even)
    edit_order: Mapping[Urgency, float] = field(default_factory=Urgency.even)
    active_horizon: float = 5.0  # a message edited this recently counts as streaming
    # None: a turn's message is posted as a placeholder when the turn begins. A number: the first post
    # waits for the turn's first text and then this long, so it opens with a phrase (where posts are
    # cheaper than edits, a turn's first words then never wait for an edit).
    first_post_grace: float | None = None
    placeholder_after: float | None = None  # with a grace: a turn still without text shows a placeholder
    streams: StreamLimits | None = None  # the platform's native streams, where a turn may use them

    @property
    def channel_period(self) -> float:
        return self.channel_window / self.channel_writes

    @property
    def edit_period(self) -> float:
        return self.edit_window / self.edits if self.edits else 0.0


class _Queue(ABC):
    """Grants waiting requests lowest key first, when `available()` allows; a grant spends one."""

    def __init__(self) -> None:
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def waiting(self) -> int:
        return sum(1 for _key, _arrival, grant in self._waiters if not grant.done())

    async def wait(self, key: float) -> None:
        """Until granted. A caller cancelled after its grant gives it back (`refund`)."""
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


class ChannelBudget(_Queue):
    """`writes` writes per `window` seconds in one channel, each counted from when it was answered."""

    def __init__(self, writes: int, window: float) -> None:
        super().__init__()
        self.writes = writes
        self.window = window
        self._answered: deque[float] = deque()
        self._inflight = 0

    def _free(self, now: float) -> int:
        while self._answered and now - self._answered[0] >= self.window:
            self._answered.popleft()
        return self.writes - len(self._answered) - self._inflight

    def idle(self, now: float) -> bool:
        """Nothing in flight, nothing waiting, no write in the window: a fresh budget would behave the same."""
        return self._free(now) == self.writes and not self.waiting

    def available(self) -> float:
        now = asyncio.get_running_loop().time()
        if self._free(now) > 0:
            return 0.0
        if not self._answered:
            return -1.0  # every write is in flight: the first to be answered pumps
        return self._answered[0] + self.window - now

    def spend(self) -> None:
        self._inflight += 1

    def refund(self) -> None:
        self._inflight -= 1
        self.pump()

    def done(self) -> None:
        self._inflight -= 1
        self._answered.append(asyncio.get_running_loop().time())
        self.pump()


class EditBudget(_Queue):
    """`edits` edits per `window` seconds, refilled continuously."""

    def __init__(self, edits: int, window: float) -> None:
        super().__init__()
        self.capacity = float(edits)
        self.rate = edits / window
        self.tokens = float(edits)
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

    def take(self, count: int) -> bool:
        """Spend `count` now if they are there and nobody waits; never waits."""
        self._refill()
        if self.waiting or self.tokens < count:
            return False
        self.tokens -= count
        return True


class Pacer:
    """Every write one workspace (Slack) or one bot (Discord) makes, paced to `limits`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._channels: dict[str, ChannelBudget] = {}
        self._prune_channels_at = PRUNE_CHANNELS_AT  # how many budgets before those at rest are forgotten
        self._edits = EditBudget(limits.edits, limits.edit_window) if limits.edits else None
        self._last_edit = Recency()  # message key -> when its last edit was granted or answered
        self._shown = Recency()  # message key -> when it last changed (posted or edited)
        streams = limits.streams
        self._stream_calls = EditBudget(streams.calls, streams.window) if streams else None
        self._appends = EditBudget(streams.appends, streams.window) if streams else None
        self._last_append = Recency()  # stream message key -> when its last append was answered
        self.streams_refused: str | None = None  # why this workspace's streams are off (the first refusal)

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    def channel(self, channel: str) -> ChannelBudget:
        """The one budget of `channel`; budgets back at rest are forgotten (a fresh one behaves the same)
        once there are PRUNE_CHANNELS_AT of them, so the pacer does not grow with every thread ever written to."""
        if len(self._channels) >= self._prune_channels_at:
            now = self._now()
            for idle in [c for c, budget in self._channels.items() if c != channel and budget.idle(now)]:
                del self._channels[idle]
            # looked at again once they have doubled: each lookup costs O(1) over time, not one look at all
            self._prune_channels_at = max(PRUNE_CHANNELS_AT, 2 * len(self._channels))
        budget = self._channels.get(channel)
        if budget is None:
            budget = self._channels[channel] = ChannelBudget(self.limits.channel_writes, self.limits.channel_window)
        return budget

    @property
    def channel_count(self) -> int:
        return len(self._channels)

    async def _channel_turn(self, channel: str, urgency: Urgency) -> ChannelBudget:
        budget = self.channel(channel)
        await budget.wait(self._now() + self.limits.write_order[urgency] * self.limits.channel_period)
        return budget

    @asynccontextmanager
    async def posting(self, channel: str, urgency: Urgency = Urgency.REPLY) -> AsyncIterator[None]:
        """Hold one of `channel`'s writes for a post: when several wait, the most urgent goes first."""
        budget = await self._channel_turn(channel, urgency)
        try:
            yield
        finally:
            budget.done()

    def shown(self, channel: str, message_id: str) -> None:
        """Record that a message just changed visibly: it was posted."""
        now = self._now()
        self._shown.note(f"{channel}:{message_id}", now)
        if len(self._shown) > 256:
            self._shown.forget_before(now - SHOWN_MEMORY * self.limits.edit_window)

    @asynccontextmanager
    async def editing(self, channel: str, message_id: str, urgency: Urgency = Urgency.REPLY) -> AsyncIterator[None]:
        """Hold what one edit of a message needs: its `edit_interval`, then the edit budget and the
        channel's write, as the limits have them. Streamed text (`Urgency.TEXT`) queues by when its message
        last changed, so the one that has shown nothing new for longest goes first."""
        key = f"{channel}:{message_id}"
        last = self._last_edit.get(key)
        if last is not None and (wait := last + self.limits.edit_interval - self._now()) > 0:
            await asyncio.sleep(wait)
        if self._edits is not None:
            since = self._shown.get(key, self._now()) if urgency == Urgency.TEXT else self._now()
            await self._edits.wait(since + self.limits.edit_order[urgency] * self.limits.edit_period)
        budget = None
        if self.limits.edits_use_channel:
            try:
                budget = await self._channel_turn(channel, urgency)
            except BaseException:
                if self._edits is not None:
                    self._edits.refund()
                raise
        self._noted(key, self._last_edit)
        try:
            yield
        finally:
            if budget is not None:
                budget.done()
            # the next edit waits `edit_interval` from the answer, so jitter never bunches two together
            self._noted(key, self._last_edit)

    def _noted(self, key: str, last: Recency) -> None:
        """`key`'s message changed now: by an edit (`last` is `_last_edit`) or an append (`_last_append`)."""
        now = self._now()
        last.note(key, now)
        self._shown.note(key, now)

    def start_stream(self) -> bool:
        """Whether a turn's next message may be a native stream: streams on here, and a start and its stop
        free in the budget right now (both are taken: a stream started can always be stopped)."""
        budget = self._stream_calls
        return budget is not None and self.streams_refused is None and budget.take(2)

    def refuse_streams(self, reason: str) -> None:
        """The platform refused a stream: this workspace posts and updates from now on."""
        if self.streams_refused is None:
            log.warning("native streams refused (%s): this workspace's turns are posted and updated", reason)
            self.streams_refused = reason

    @asynccontextmanager
    async def appending(self, channel: str, message_id: str) -> AsyncIterator[None]:
        """Hold what one append to a stream needs: its message's `edit_interval`, then the append budget."""
        key = f"{channel}:{message_id}"
        last = self._last_append.get(key)
        if last is not None and (wait := last + self.limits.edit_interval - self._now()) > 0:
            await asyncio.sleep(wait)
        if self._appends is not None:
            await self._appends.wait(self._shown.get(key, self._now()))
        self._noted(key, self._last_append)
        try:
            yield
        finally:
            self._noted(key, self._last_append)
            if len(self._last_append) > 256:  # streams end: forget the ones long quiet
                self._last_append.forget_before(self._now() - SHOWN_MEMORY * self.limits.edit_window)

    def streaming(self) -> int:
        """How many messages were edited within the last `active_horizon` seconds."""
        self._last_edit.forget_before(self._now() - self.limits.active_horizon)
        return len(self._last_edit)

    def min_edit_interval(self) -> float:
        """The edit interval each streaming message should keep so all of them fit the edit budget: it grows
        with the messages streaming at once, so live turns coalesce harder."""
        if not self.limits.edits:
            return self.limits.edit_interval
        share = max(1, self.streaming()) * self.limits.edit_window / self.limits.edits
        return max(self.limits.edit_interval, share)


class Pacers:
    """One Pacer per workspace (a Slack team; token mode, like a Discord bot, has a single one)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._by_workspace: dict[str, Pacer] = {}

    def for_workspace(self, workspace: str | None) -> Pacer:
        key = workspace or "-"
        if key not in self._by_workspace:
            self._by_workspace[key] = Pacer(self.limits)
        return self._by_workspace[key]
