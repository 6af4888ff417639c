"""A turn's messages as the platform's own streams (Slack's chat.startStream / appendStream / stopStream),
where the pacer lets them be; `LiveTurns` posts and updates the rest as before.

A stream only grows: each append sends the text added since the last one. So a part streams only what is
settled (up to its last space, and never an unfinished `[link](`, whose inert form differs from its
prefix); a part whose text changes otherwise (a new attempt, a table moving to the next part) or that
grew old (`StreamLimits.max_age`, under the platform's own close) is stopped, and `LiveTurns` updates
it from then on. A refused start switches the workspace to posts and updates (`Pacer.refuse_streams`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bots.thread.coalesce import Paced, run_to_completion
from bots.thread.pacing import Urgency

log = logging.getLogger(__name__)


class StreamRefused(Exception):
    """The platform would not start a stream (not enabled, a scope missing, over its limit)."""


@runtime_checkable
class StreamSurface(Protocol):
    """What a surface offers to stream a turn's message natively; `recipient` is (user, workspace)."""

    thread_channel: str

    async def start_stream(self, text: str, recipient: tuple[str, str]) -> str: ...

    async def append_stream(self, message_id: str, text: str) -> None: ...

    async def stop_stream(self, message_id: str) -> None: ...


@dataclass
class _Stream:
    sent: str
    started_at: float
    open: bool = True


def settled(chunk: str) -> str:
    """The part of a growing chunk that will not change: up to its last space, and before a `[` that may
    still become a link (no `]` yet, or `](` with no `)` yet; a complete link was made text already)."""
    bracket = chunk.rfind("[")
    if bracket != -1:
        tail = chunk[bracket:]
        close = tail.find("]")
        if close == -1 or (tail[close + 1:close + 2] in ("", "(") and ")" not in tail[close:]):
            chunk = chunk[:bracket]
    space = max(chunk.rfind(" "), chunk.rfind("\n"))
    return chunk[: space + 1]


class Streams:
    """One debate's streamed messages, by message id."""

    def __init__(self, out: Paced[Any], surface: StreamSurface, recipient: tuple[str, str]) -> None:
        self.out = out
        self.pacer = out.pacer
        self.surface = surface
        self.recipient = recipient
        self._streams: dict[str, _Stream] = {}

    def is_open(self, message_id: str) -> bool:
        stream = self._streams.get(message_id)
        return stream is not None and stream.open

    async def post(self, render: Callable[[], str], record: Callable[[str, str], Awaitable[None]]) -> str | None:
        """Start a stream showing what `render()` gives (settled) when the pacer has a start for it;
        `record(message_id, text)` runs as part of the write. None: post it instead."""
        if not self.pacer.start_stream():
            return None
        channel = self.surface.thread_channel
        self.out.check()
        async with self.pacer.posting(channel, Urgency.TEXT):
            self.out.check()  # stopped while this waited for the channel's turn
            text = settled(render()) or "…"

            async def start() -> str:
                message_id = await self.surface.start_stream(text, self.recipient)
                self._streams[message_id] = _Stream(text, asyncio.get_running_loop().time())
                await record(message_id, text)
                return message_id

            try:
                message_id = await run_to_completion(start())
            except StreamRefused as exc:
                self.pacer.refuse_streams(str(exc))
                return None
        self.pacer.shown(channel, message_id)
        return message_id

    async def update(self, message_id: str, render: Callable[[], str | None], *, final: bool) -> str | None:
        """Append to an open stream what `render()` adds; with `final`, the whole of it, then stop.
        Returns the text the message shows now, or None when the stream could not take it (it is
        stopped then: the caller updates the message)."""
        stream = self._streams[message_id]
        channel = self.surface.thread_channel
        async with self.pacer.appending(channel, message_id):
            chunk = render()
            if chunk is None:
                return stream.sent
            target = chunk if final else settled(chunk)
            young = asyncio.get_running_loop().time() - stream.started_at < self._max_age()
            if young and target.startswith(stream.sent):
                if len(target) > len(stream.sent):
                    try:
                        await run_to_completion(self.surface.append_stream(message_id, target[len(stream.sent):]))
                    except Exception:  # closed by the platform meanwhile: updated from here on
                        log.warning("stream %s took no more text; updating it instead", message_id, exc_info=True)
                        stream.open = False
                        return None
                    stream.sent = target
                if not final:
                    return stream.sent
                await self.stop(message_id)
                return stream.sent
        await self.stop(message_id)
        return None

    async def stop(self, message_id: str) -> None:
        """Stop a stream (its stop was taken from the budget when it started); the message stays."""
        stream = self._streams.get(message_id)
        if stream is None or not stream.open:
            return
        stream.open = False
        try:
            await run_to_completion(self.surface.stop_stream(message_id))
        except Exception:  # the platform closes a stream itself after a while: the text stays either way
            log.warning("stream %s could not be stopped", message_id, exc_info=True)

    async def release(self, message_id: str) -> None:
        """Stop whatever stream an earlier renderer (before a restart) may have left open on a message this
        one is about to update; a message that is no stream answers with an error, ignored."""
        if message_id in self._streams:
            return
        self._streams[message_id] = _Stream("", 0.0, open=False)
        try:
            await run_to_completion(self.surface.stop_stream(message_id))
        except Exception:  # not a stream, or closed already: an update works on it
            log.debug("message %s had no open stream", message_id, exc_info=True)

    def _max_age(self) -> float:
        limits = self.pacer.limits.streams
        return limits.max_age if limits is not None else 0.0
