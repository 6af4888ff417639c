"""Write pacing for one Slack workspace, shared by every debate streaming into it.

Slack allows about one chat.postMessage per second per channel, and chat.update is Tier 3: about 50
a minute for the whole workspace. The pacer makes writers wait their turn instead of collecting 429s:
posts are spaced per channel, updates draw from one token bucket, and edits to the same message are
spaced by `edit_interval`. `min_edit_interval` grows with the number of messages being edited at
once, so LiveTurns coalesces harder when many debates stream together.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class PacingLimits:
    """Defaults sit a little under Slack's published limits, leaving room for clock jitter."""

    post_interval: float = 1.05  # seconds between posts in one channel
    updates: int = 45  # chat.update calls per `window` per workspace
    window: float = 60.0
    edit_interval: float = 1.0  # seconds between two edits of one message
    active_horizon: float = 5.0  # a message edited this recently counts as streaming


class Pacer:
    def __init__(self, limits: PacingLimits | None = None) -> None:
        self.limits = limits or PacingLimits()
        self._channel_locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._last_post: dict[str, float] = {}
        self._last_edit: dict[str, float] = {}
        self._update_lock = asyncio.Lock()
        self._tokens = float(self.limits.updates)
        self._refilled_at: float | None = None

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    @asynccontextmanager
    async def posting(self, channel: str) -> AsyncIterator[None]:
        """Hold `channel`'s turn for one post: wait `post_interval` after the previous post was
        answered (so network jitter can never bunch two posts together at Slack's end), post, release."""
        async with self._channel_locks[channel]:
            last = self._last_post.get(channel)
            if last is not None:
                wait = last + self.limits.post_interval - self._now()
                if wait > 0:
                    await asyncio.sleep(wait)
            try:
                yield
            finally:
                self._last_post[channel] = self._now()

    async def before_update(self, message_key: str) -> None:
        """Wait until `message_key` may be edited again and the workspace has an update to spend."""
        last = self._last_edit.get(message_key)
        if last is not None:
            wait = last + self.limits.edit_interval - self._now()
            if wait > 0:
                await asyncio.sleep(wait)
        await self._take_update()
        self._last_edit[message_key] = self._now()

    async def _take_update(self) -> None:
        limits = self.limits
        rate = limits.updates / limits.window
        async with self._update_lock:  # FIFO: waiters are served in arrival order
            while True:
                now = self._now()
                if self._refilled_at is not None:
                    self._tokens = min(limits.updates, self._tokens + (now - self._refilled_at) * rate)
                self._refilled_at = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                await asyncio.sleep((1 - self._tokens) / rate)

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
