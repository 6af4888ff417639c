"""Streams turns into a chat thread as they are written, whatever the platform.

Each turn becomes one message, edited as text arrives (at most once per the pacer's `min_edit_interval`) and
continued in a new message before the surface's `stream_limit`; several turns may stream at once, each with its own
flusher task. The surface renders; `LiveTurns` owns timing and records each message's id under its key as soon as it
is posted, and again as final once the turn's final text shows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from bots.thread.coalesce import Paced
from bots.thread.live_turn import FIRST_WORDS, LiveTurn, TurnKey, message_key, seat_of, started
from bots.thread.pacing import Urgency
from bots.thread.streams import Streams, StreamSurface
from bots.thread.text import split_message
from orchestrator.events import TextDelta, TurnStarted
from orchestrator.log import MessageRecord
from orchestrator.models import DebateSpec, Turn

log = logging.getLogger(__name__)

class LiveTurns:
    """A debate's streaming turns. Idempotent for events delivered at least once and replayed after a restart:
    a turn is not begun or shown twice, one recorded final is skipped, one not final is streamed again into its
    messages; a delta seen before adds nothing, and a new attempt starts the turn's text over."""

    def __init__(
        self,
        out: Paced[Any],
        spec: DebateSpec,
        on_posted: Callable[[str, str], Awaitable[None]],
        placeholder: str = "_…_",
        *,
        first_post_grace: float | None = None,
        placeholder_after: float | None = None,
        on_final: Callable[[str, str], Awaitable[None]] | None = None,
        recorded: Mapping[str, MessageRecord] | None = None,
    ) -> None:
        """`on_posted(key, message_id)` records each message as soon as it exists, `on_final(key,
        message_id)` each once it shows the turn's final text. `first_post_grace`:
        None posts the placeholder when a turn begins. A number (where edits are scarcer than posts: Slack)
        defers the turn's first post until its text has been arriving that many seconds (or the turn ended);
        a turn still without text `placeholder_after` seconds after it began shows the placeholder.
        `recorded`: the messages that exist already, by key (a resumed thread); read as turns begin, so it
        may be a live view."""
        self.out = out
        self.surface = out.surface
        self.spec = spec
        self.on_posted = on_posted
        self.on_final = on_final
        self.recorded: Mapping[str, MessageRecord] = recorded if recorded is not None else {}
        self.placeholder = placeholder
        self.first_post_grace = first_post_grace
        self.placeholder_after = placeholder_after
        self._turns: dict[TurnKey, LiveTurn] = {}
        self._done: set[TurnKey] = set()  # finished here, or final in the log: never shown again
        self._ending: set[asyncio.Task[None]] = set()  # ended turns whose last edits are still to come
        recipient = (spec.requested_by, spec.workspace) if spec.requested_by and spec.workspace else None
        self.streams = Streams(out, self.surface, recipient) if (
            out.pacer.limits.streams is not None and isinstance(self.surface, StreamSurface) and recipient) else None

    def _existing(self, key: TurnKey) -> list[MessageRecord]:
        """The turn's recorded messages, parts 0, 1, … in order, up to the first part missing."""
        parts: list[MessageRecord] = []
        while (record := self.recorded.get(message_key(key, len(parts)))) is not None:
            parts.append(record)
        return parts

    def _is_done(self, key: TurnKey) -> bool:
        if key not in self._done:
            parts = self._existing(key)
            if not parts or not all(p.final for p in parts):
                return False
            self._done.add(key)
        return True

    def _new(self, event: TurnStarted) -> LiveTurn:
        key = (event.round, event.seat, event.kind, event.take)
        ids = [p.message_id for p in self._existing(key)]
        return LiveTurn(key=key, header=self.surface.turn_header(event), seat=seat_of(self.spec, event),
                         message_ids=ids, shown=[None] * len(ids), showing_text=bool(ids))

    async def begin(self, event: TurnStarted) -> None:
        key = (event.round, event.seat, event.kind, event.take)
        if key in self._turns or self._is_done(key):
            return  # a repeat, or shown in full already
        live = self._new(event)
        self._turns[key] = live
        if self.first_post_grace is None and not live.message_ids:
            await self._sync(live)  # the placeholder: users see the turn has started
        live.flusher = asyncio.create_task(self._stream(live), name=f"live-{key}")

    def feed(self, event: TextDelta) -> None:
        live = self._turns.get((event.round, event.seat, event.kind, event.take))
        if live is None or live.final:
            return
        if event.attempt != live.attempt:
            if event.attempt in live.attempts:
                return  # a late delta of an attempt the turn has moved past
            live.attempts.add(event.attempt)
            live.attempt = event.attempt
            live.text = ""  # the model call ran again: its text starts over, in the same messages
        if event.offset + len(event.delta) <= len(live.text):
            return  # delivered before
        if event.offset <= len(live.text):
            live.text = live.text[: event.offset] + event.delta
        else:  # a delta went missing: show what came (the turn's final text is whole)
            live.text += event.delta
        live.changed.set()

    async def finish(self, turn: Turn, display_text: str | None = None, *, wait_for_edits: bool = True,
                     take: int = 0) -> list[str]:
        """Show the turn's final text (or `display_text`); returns the message ids it occupies.

        With `wait_for_edits=False` this returns once every message of the turn exists (so what is
        posted next comes after it in the thread); the edits still due go on in the background until
        `drain()`. A failed final post or edit raises here, or is logged when it happens later."""
        key = (turn.round, turn.seat, turn.kind, take)
        if self._is_done(key):
            return [p.message_id for p in self._existing(key)]
        self._done.add(key)
        live = self._turns.pop(key, None)
        if live is None:
            live = self._new(started(turn, take))
        live.final = True
        live.text = display_text if display_text is not None else turn.text
        live.changed.set()
        live.ended.set()
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

    def cut_off(self) -> None:
        """The debate ended with these turns unfinished (its log stopped it, or it was stopped): each
        shows the text it had, without the streaming cursor, and is done; `drain()` waits for the edits.
        A turn that never showed anything posts nothing."""
        for key, live in list(self._turns.items()):
            del self._turns[key]
            self._done.add(key)
            live.final = True
            live.changed.set()
            live.ended.set()
            if not live.message_ids and not live.text:
                if live.flusher is not None:
                    live.flusher.cancel()
                continue
            if live.flusher is None or live.flusher.done():
                live.flusher = asyncio.create_task(self._stream(live), name=f"live-{key}")
            self._ending.add(live.flusher)
            live.flusher.add_done_callback(self._ended)

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

    def _render(self, live: LiveTurn, *, cursor: bool = True) -> list[str]:
        """The turn's messages as they should read now (made inert, split to the surface's limit); the same
        list while the text, the ending and the cursor stay the same (a sync asks several times)."""
        made_of = (live.text, live.final, cursor)
        if live.rendered is not None and live.rendered[0] == made_of:
            return live.rendered[1]
        body = self.surface.neutralize(live.text) if live.text else self.placeholder
        if cursor and not live.final and live.text:  # a native stream shows its own
            body += " ▍"
        chunks = split_message(f"{live.header}\n{body}", self.surface.stream_limit)
        live.rendered = (made_of, chunks)
        return chunks

    async def _stream(self, live: LiveTurn) -> None:
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
            if not live.showing_text:  # the placeholder: its first text goes as soon as it is a phrase
                await self._first_phrase(live)
                wait = 0.0
            else:
                streamed = self.streams is not None and all(self.streams.is_open(m) for m in live.message_ids)
                interval = self.out.pacer.limits.edit_interval if streamed else self.out.pacer.min_edit_interval()
                wait = interval - (loop.time() - last)
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
        if self.streams is not None:
            for message_id in live.message_ids:
                await self.streams.stop(message_id)
        if self.on_final is not None:
            for index, message_id in enumerate(live.message_ids):
                if message_id not in live.recorded_final:
                    await self.on_final(message_key(live.key, index), message_id)

    async def _first_text(self, live: LiveTurn) -> bool:
        """Wait until the turn's first post should go: True then; False once the turn has ended."""
        if self.placeholder_after is not None:
            await self._within(self._has_text(live), self.placeholder_after)
            if not live.text and not live.final:
                return True  # the placeholder: the turn is slow to start
        await self._first_phrase(live)
        return not live.final

    def first_text_wait(self) -> float:
        """How long after its first text a turn's first post (or first edit) may wait for a phrase: the
        grace, or one edit interval, the soonest an edit could have shown more."""
        return max(self.first_post_grace or 0.0, self.out.pacer.limits.edit_interval)

    async def _first_phrase(self, live: LiveTurn) -> None:
        """Until the turn has text, then until it holds a phrase (FIRST_WORDS words; at most `first_text_wait()`
        longer): the first text a turn shows, whether it replaces a placeholder or opens the first post."""
        await self._has_text(live)
        await self._within(self._has_phrase(live), self.first_text_wait())
        live.changed.set()

    @staticmethod
    async def _has_text(live: LiveTurn) -> None:
        while not live.text and not live.final:
            live.changed.clear()
            await live.changed.wait()
        live.changed.set()  # for the edit loop: it decides whether anything is left to show

    @staticmethod
    async def _has_phrase(live: LiveTurn) -> None:
        while len(live.text.split(maxsplit=FIRST_WORDS)) < FIRST_WORDS and not live.final:
            live.changed.clear()
            await live.changed.wait()
        live.changed.set()

    @classmethod
    async def _pause(cls, live: LiveTurn, seconds: float) -> None:
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

    async def _sync(self, live: LiveTurn) -> None:
        """Make the thread show the current rendering: first post the messages still missing (in
        order, so the thread reads in order), then edit those whose text changed. Each write is rendered
        when the pacer lets it go (`Paced`), so it carries the newest text."""
        while len(live.message_ids) < len(self._render(live)):
            await self._post(live, len(live.message_ids))
        if live.final:
            live.posted.set()
        for index, (shown, chunk) in enumerate(zip(live.shown, self._render(live), strict=False)):
            if chunk != shown:
                await self._edit(live, index)
        if live.final:  # parts left over from a longer attempt, or from before a restart
            for index in range(len(self._render(live)), len(live.message_ids)):
                if live.shown[index] != self.placeholder:
                    await self._edit(live, index)

    def _stream_chunk(self, live: LiveTurn, index: int) -> str | None:
        chunks = self._render(live, cursor=False)
        return chunks[index] if index < len(chunks) else self.placeholder if live.final else None

    async def _post(self, live: LiveTurn, index: int) -> None:
        """Post part `index`: as a native stream where the surface has them and the pacer a start for one
        (`bots.thread.streams`), else as a message."""
        if self.streams is not None:
            async def record_stream(message_id: str, text: str) -> None:
                live.message_ids.append(message_id)
                live.shown.append(text)
                live.showing_text = live.showing_text or bool(live.text)
                await self.on_posted(message_key(live.key, index), message_id)

            if await self.streams.post(lambda: self._stream_chunk(live, index) or self.placeholder,
                                       record_stream) is not None:
                return
        sent = ""

        with_text = final = False

        def render() -> Any:
            nonlocal sent, with_text, final
            chunks = self._render(live)
            sent = chunks[index] if index < len(chunks) else self.placeholder  # a final text shorter than the stream
            with_text, final = bool(live.text), live.final
            return self.surface.turn(live.seat, sent)

        async def record(message_id: str, posted: bool) -> None:
            live.message_ids.append(message_id)
            live.shown.append(sent if posted else None)  # found (an earlier post's): what it shows is unknown
            live.showing_text = live.showing_text or with_text or not posted
            key = message_key(live.key, index)
            if posted and final and self.on_final is not None:  # it shows the final text already: one record
                live.recorded_final.add(message_id)
                await self.on_final(key, message_id)
            else:
                await self.on_posted(key, message_id)

        await self.out.post(render, Urgency.TEXT, record=record, key=message_key(live.key, index))

    async def _edit(self, live: LiveTurn, index: int) -> None:
        if self.streams is not None and self.streams.is_open(live.message_ids[index]):
            done = live.final or index < len(self._render(live)) - 1  # a part the turn has moved past is done
            shown = await self.streams.update(live.message_ids[index], lambda: self._stream_chunk(live, index),
                                              final=done)
            if shown is not None:
                live.shown[index] = shown
                return
        elif self.streams is not None and live.shown[index] is None:  # posted before a restart: maybe a stream
            await self.streams.release(live.message_ids[index])
        sent: str | None = None
        with_text = False

        def render() -> Any:
            nonlocal sent, with_text
            chunks = self._render(live)
            chunk = chunks[index] if index < len(chunks) else self.placeholder if live.final else None
            if chunk is None or chunk == live.shown[index]:
                return None
            sent, with_text = chunk, bool(live.text)
            return self.surface.turn(live.seat, sent)

        # a turn's first text is what its readers wait for: ahead of the edits of turns that show text
        urgency = Urgency.TEXT if live.showing_text else Urgency.USER
        await self.out.edit(live.message_ids[index], render, urgency)
        if sent is not None:
            live.shown[index] = sent
            live.showing_text = live.showing_text or with_text
