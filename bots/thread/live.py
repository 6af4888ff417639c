"""Streams turns into a chat thread as they are written, whatever the platform.

Each turn becomes one message, edited as text arrives (at most once per `min_edit_interval`) and
continued in a new message before the platform's `limit`. Several turns may stream at once (parallel
rounds); each has its own flusher task. The platform supplies a ThreadWriter; this class owns timing.

By default a turn's message is posted as a placeholder when the turn starts. With `first_post_grace`
the first post waits for the turn's first text instead, so it is the post that shows the text: where
edits are scarcer than posts (Slack), a turn's first words then never wait for an edit. A writer that
also implements `LatestTextWriter` renders each post and edit only when its platform lets the call
go, so a call that waited long carries the newest text, and a turn that ended meanwhile needs no edit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from bots.thread.text import split_message
from orchestrator.events import TextDelta, TurnStarted
from orchestrator.models import Turn

log = logging.getLogger(__name__)

TurnKey = tuple[int, str, str]  # round, seat, kind


class ThreadWriter(Protocol):
    limit: int
    min_edit_interval: float

    async def post(self, text: str) -> str: ...

    async def edit(self, message_id: str, text: str) -> None: ...


@runtime_checkable
class LatestTextWriter(Protocol):
    """Optional for a ThreadWriter: take the text as a function, called when the call is finally made."""

    async def post_latest(self, render: Callable[[], str]) -> str: ...

    async def edit_latest(self, message_id: str, render: Callable[[], str | None]) -> None:
        """`render` returning None means there is nothing new to show: no call is made."""


@dataclass
class _LiveTurn:
    header: str
    text: str = ""
    final: bool = False
    message_ids: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # text arrived, or the turn ended
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    posted: asyncio.Event = field(default_factory=asyncio.Event)  # ended, and every message it needs exists
    writing: bool = False  # a post or edit is on its way: cancelling it could orphan a message or wedge
    # the platform client's own rate-limit bookkeeping
    flusher: asyncio.Task[None] | None = None


def _identity(text: str) -> str:
    return text


class LiveTurns:
    def __init__(
        self,
        writer: ThreadWriter,
        render_header: Callable[[TurnStarted], str],
        neutralize: Callable[[str], str] = _identity,
        placeholder: str = "_…_",
        *,
        first_post_grace: float | None = None,
        placeholder_after: float | None = None,
    ) -> None:
        """`first_post_grace`: None posts the placeholder when a turn begins. A number defers the
        turn's first post until its text has been arriving that many seconds (or the turn ended); a
        turn still without text `placeholder_after` seconds after it began shows the placeholder."""
        self.writer = writer
        self.render_header = render_header
        self.neutralize = neutralize
        self.placeholder = placeholder
        self.first_post_grace = first_post_grace
        self.placeholder_after = placeholder_after
        self._turns: dict[TurnKey, _LiveTurn] = {}
        self._ending: set[asyncio.Task[None]] = set()  # ended turns whose last edits are still to come

    async def begin(self, event: TurnStarted) -> None:
        key = (event.round, event.seat, event.kind)
        live = _LiveTurn(header=self.render_header(event))
        self._turns[key] = live
        if self.first_post_grace is None:
            await self._sync(live)  # the placeholder: users see the turn has started
        live.flusher = asyncio.create_task(self._stream(live), name=f"live-{key}")

    def feed(self, event: TextDelta) -> None:
        live = self._turns.get((event.round, event.seat, event.kind))
        if live is None or live.final:
            return
        live.text += event.delta
        live.changed.set()

    async def finish(self, turn: Turn, display_text: str | None = None, *, wait_for_edits: bool = True) -> list[str]:
        """Show the turn's final text (or `display_text`); returns the message ids it occupies.

        With `wait_for_edits=False` this returns once every message of the turn exists (so what is
        posted next comes after it in the thread); the edits still due go on in the background until
        `drain()`. A failed final post or edit raises here, or is logged when it happens later."""
        key = (turn.round, turn.seat, turn.kind)
        live = self._turns.pop(key, None)
        if live is None:
            live = _LiveTurn(header=turn.seat)
        live.final = True
        live.text = display_text if display_text is not None else turn.text
        live.changed.set()
        live.ended.set()
        if live.flusher is not None and not live.writing and not isinstance(self.writer, LatestTextWriter):
            live.flusher.cancel()  # the edit it was about to make would show stale text
            await asyncio.gather(live.flusher, return_exceptions=True)
        if live.flusher is None or live.flusher.done():
            live.flusher = asyncio.create_task(self._stream(live), name=f"live-{key}")
        flusher = live.flusher
        if wait_for_edits:
            await flusher
            return live.message_ids
        self._ending.add(flusher)
        flusher.add_done_callback(self._ended)
        posted = asyncio.create_task(live.posted.wait())
        try:
            await asyncio.wait({posted, flusher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            posted.cancel()
        if flusher.done() and not flusher.cancelled():
            flusher.result()  # the final post failed: raise it here
        return list(live.message_ids)

    async def drain(self) -> None:
        """Until the edits of every turn finished with `wait_for_edits=False` are made (or failed)."""
        while self._ending:
            await asyncio.gather(*self._ending, return_exceptions=True)

    async def aclose(self) -> None:
        flushers = [t.flusher for t in self._turns.values() if t.flusher] + list(self._ending)
        self._turns.clear()
        for flusher in flushers:
            flusher.cancel()
        await asyncio.gather(*flushers, return_exceptions=True)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._ending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("live: the final text of a turn could not be shown", exc_info=task.exception())

    def _render(self, live: _LiveTurn) -> list[str]:
        body = self.neutralize(live.text) if live.text else self.placeholder
        if not live.final and live.text:
            body += " ▍"
        return split_message(f"{live.header}\n{body}", self.writer.limit)

    async def _stream(self, live: _LiveTurn) -> None:
        """A turn's flusher: its first post (when deferred), edits as text arrives, then the final text."""
        loop = asyncio.get_running_loop()
        if not live.message_ids and await self._first_text(live):
            try:
                await self._sync(live)
            except Exception:  # retried by the next flush, or by the final one
                log.warning("live post failed; will retry", exc_info=True)
        last = loop.time()
        while not live.final:
            await live.changed.wait()
            wait = self.writer.min_edit_interval - (loop.time() - last)
            if wait > 0:
                await self._pause(live, wait)  # pacing: coalesce every delta that arrives meanwhile
            if live.final:
                break
            live.changed.clear()
            try:
                await self._sync(live)
            except Exception:  # a failed edit is retried by the next flush or by the final one
                log.warning("live edit failed; will retry", exc_info=True)
            last = loop.time()
        await self._sync(live)

    async def _first_text(self, live: _LiveTurn) -> bool:
        """Wait until the turn's first post should go: True then; False once the turn has ended."""
        if self.placeholder_after is not None:
            await self._within(self._has_text(live), self.placeholder_after)
            if not live.text and not live.final:
                return True  # the placeholder: the turn is slow to start
        await self._has_text(live)
        if self.first_post_grace:
            await self._pause(live, self.first_post_grace)  # collect a phrase, not a word
        return not live.final

    @staticmethod
    async def _has_text(live: _LiveTurn) -> None:
        while not live.text and not live.final:
            live.changed.clear()
            await live.changed.wait()
        live.changed.set()  # for the edit loop: it decides whether anything is left to show

    @classmethod
    async def _pause(cls, live: _LiveTurn, seconds: float) -> None:
        """Sleep `seconds`, or less if the turn ends meanwhile."""
        await cls._within(live.ended.wait(), seconds)

    @staticmethod
    async def _within(wait: Coroutine[Any, Any, Any], seconds: float) -> None:
        """Await `wait` for at most `seconds`. (Not asyncio.wait_for: on 3.11 it swallows a cancel
        that arrives as `wait` completes, and finish() cancels just as it ends the turn.)"""
        task = asyncio.ensure_future(wait)
        try:
            await asyncio.wait({task}, timeout=seconds)
        finally:
            task.cancel()

    async def _sync(self, live: _LiveTurn) -> None:
        """Make the thread show the current rendering: first post the messages still missing (in
        order, so the thread reads in order), then edit those whose text changed."""
        while len(live.message_ids) < len(self._render(live)):
            await self._post(live, len(live.message_ids))
        if live.final:
            live.posted.set()
        for index, (shown, chunk) in enumerate(zip(live.shown, self._render(live), strict=False)):
            if chunk != shown:
                await self._edit(live, index)

    async def _post(self, live: _LiveTurn, index: int) -> None:
        sent = ""

        def render() -> str:
            nonlocal sent
            chunks = self._render(live)
            sent = chunks[index] if index < len(chunks) else self.placeholder  # a final text shorter than the stream
            return sent

        live.writing = True
        try:
            if isinstance(self.writer, LatestTextWriter):
                message_id = await self.writer.post_latest(render)
            else:
                message_id = await self.writer.post(render())
        finally:
            live.writing = False
        live.message_ids.append(message_id)
        live.shown.append(sent)

    async def _edit(self, live: _LiveTurn, index: int) -> None:
        sent: str | None = None

        def render() -> str | None:
            nonlocal sent
            chunks = self._render(live)
            if index >= len(chunks) or chunks[index] == live.shown[index]:
                return None
            sent = chunks[index]
            return sent

        live.writing = True
        try:
            if isinstance(self.writer, LatestTextWriter):
                await self.writer.edit_latest(live.message_ids[index], render)
            elif (text := render()) is not None:
                await self.writer.edit(live.message_ids[index], text)
        finally:
            live.writing = False
        if sent is not None:
            live.shown[index] = sent
