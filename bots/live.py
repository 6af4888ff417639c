"""Streams turns into a chat thread as they are written, whatever the platform.

Each turn becomes one message, edited as text arrives (at most once per `min_edit_interval`) and
continued in a new message before the platform's `limit`. Several turns may stream at once (parallel
rounds); each has its own flusher task. The platform supplies a ThreadWriter; this class owns timing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from bots.text import split_message
from orchestrator.events import TextDelta, TurnStarted
from orchestrator.models import Turn

log = logging.getLogger(__name__)

TurnKey = tuple[int, str, str]  # round, seat, kind


class ThreadWriter(Protocol):
    limit: int
    min_edit_interval: float

    async def post(self, text: str) -> str: ...

    async def edit(self, message_id: str, text: str) -> None: ...


@dataclass
class _LiveTurn:
    header: str
    text: str = ""
    final: bool = False
    message_ids: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    dirty: asyncio.Event = field(default_factory=asyncio.Event)
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
    ) -> None:
        self.writer = writer
        self.render_header = render_header
        self.neutralize = neutralize
        self.placeholder = placeholder
        self._turns: dict[TurnKey, _LiveTurn] = {}

    async def begin(self, event: TurnStarted) -> None:
        key = (event.round, event.seat, event.kind)
        live = _LiveTurn(header=self.render_header(event))
        self._turns[key] = live
        await self._sync(live)  # the placeholder: users see the turn has started
        live.flusher = asyncio.create_task(self._flush_loop(live), name=f"live-{key}")

    def feed(self, event: TextDelta) -> None:
        live = self._turns.get((event.round, event.seat, event.kind))
        if live is None or live.final:
            return
        live.text += event.delta
        live.dirty.set()

    async def finish(self, turn: Turn, display_text: str | None = None) -> list[str]:
        """Show the turn's final text (or `display_text`); returns the message ids it occupies."""
        key = (turn.round, turn.seat, turn.kind)
        live = self._turns.pop(key, None)
        if live is None:
            live = _LiveTurn(header=turn.seat)
        live.final = True
        live.text = display_text if display_text is not None else turn.text
        if live.flusher is not None:
            live.flusher.cancel()
            await asyncio.gather(live.flusher, return_exceptions=True)
        await self._sync(live)
        return live.message_ids

    async def aclose(self) -> None:
        turns = list(self._turns.values())
        self._turns.clear()
        for live in turns:
            if live.flusher is not None:
                live.flusher.cancel()
        await asyncio.gather(*(t.flusher for t in turns if t.flusher), return_exceptions=True)

    def _render(self, live: _LiveTurn) -> list[str]:
        body = self.neutralize(live.text) if live.text else self.placeholder
        if not live.final and live.text:
            body += " ▍"
        return split_message(f"{live.header}\n{body}", self.writer.limit)

    async def _sync(self, live: _LiveTurn) -> None:
        """Make the thread show the current rendering: edit changed messages, post new ones."""
        chunks = self._render(live)
        for index, chunk in enumerate(chunks):
            if index < len(live.message_ids):
                if live.shown[index] != chunk:
                    await self.writer.edit(live.message_ids[index], chunk)
                    live.shown[index] = chunk
            else:
                live.message_ids.append(await self.writer.post(chunk))
                live.shown.append(chunk)

    async def _flush_loop(self, live: _LiveTurn) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await live.dirty.wait()
            wait = self.writer.min_edit_interval - (loop.time() - last)
            if wait > 0:
                await asyncio.sleep(wait)  # pacing: coalesce every delta that arrives meanwhile
            live.dirty.clear()
            try:
                await self._sync(live)
            except Exception:  # a failed edit is retried by the next flush or by finish()
                log.warning("live edit failed; will retry", exc_info=True)
            last = loop.time()
