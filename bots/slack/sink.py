"""Renders one debate's events into its Slack thread.

`handle()` only enqueues, so the engine never waits on Slack's pacing; one worker task per debate
applies the events in order: streamed turns (LiveTurns over SlackThreadWriter), notices, the verdict
with its buttons, and the root message's status. Every message a turn or verdict became is recorded
in the store (`set_message`).

Many debates may share a channel (one post a second) and a workspace (about 45 updates a minute),
so the thread spends them on what readers wait for: a turn's first message is posted once its text
has begun (the post shows the text; no placeholder waits for an edit), the worker moves on once a
finished turn's messages exist (its final edit follows in the background), round progress goes
into the root message's status (coalesced, least urgent) instead of a post in the thread, and the
verdict is posted with its token count when the debate has ended by the time its post goes.
"""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack import blocks
from bots.slack.pacing import Pacer, Urgency
from bots.slack.writer import Message, SlackThreadWriter
from bots.thread.live import LiveTurns
from bots.thread.text import neutralize_slack
from orchestrator.events import (
    FINAL_EVENTS,
    EventBase,
    Notice,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    VerdictReached,
)
from orchestrator.log.store import Store
from orchestrator.models import DebateSpec, Outcome, Turn, Verdict

log = logging.getLogger(__name__)
PLATFORM = "slack"


class SlackSink:
    def __init__(self, spec: DebateSpec, client: AsyncWebClient, pacer: Pacer, store: Store, root_ts: str) -> None:
        if spec.channel is None:
            raise ValueError("a Slack debate needs a channel")
        self.spec = spec
        self.store = store
        self.root_ts = root_ts
        self.writer = SlackThreadWriter(client, spec.channel, root_ts, pacer)
        turn_writer = SlackThreadWriter(client, spec.channel, root_ts, pacer, Urgency.TEXT)
        self.live = LiveTurns(turn_writer, blocks.turn_header, neutralize_slack,
                              first_post_grace=pacer.limits.first_post_delay,
                              placeholder_after=pacer.limits.placeholder_after)
        self.verdict: Verdict | None = None
        self.verdict_ts: str | None = None
        self.round_text = ""
        self._outcome: Outcome | None = None  # known as soon as the final event is queued
        self._verdict_final = False  # the verdict was posted with the debate's token count
        self._status_task: asyncio.Task[None] | None = None
        self._status_sending = False
        self._closing = False
        self._queue: asyncio.Queue[EventBase] = asyncio.Queue()
        self._worker = asyncio.create_task(self._run(), name=f"slack-sink-{spec.id}")

    async def handle(self, event: EventBase) -> None:
        if isinstance(event, FINAL_EVENTS):
            self._outcome = event.outcome  # type: ignore[attr-defined]
        self._queue.put_nowait(event)

    async def wait_closed(self) -> None:
        """Until the final event has been rendered (or the worker was cancelled)."""
        await asyncio.gather(self._worker, return_exceptions=True)

    async def aclose(self) -> None:
        self._worker.cancel()
        await self.wait_closed()
        await self._stop_status()
        await self.live.aclose()

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._apply(event)
            except Exception:
                log.exception("slack: rendering %s for debate %s failed", type(event).__name__, self.spec.id)
            if isinstance(event, FINAL_EVENTS):
                return

    async def _apply(self, event: EventBase) -> None:
        if isinstance(event, TextDelta):
            self.live.feed(event)
        elif isinstance(event, TurnStarted):
            await self.live.begin(event)
        elif isinstance(event, TurnCompleted | TurnFailed):
            await self._finish_turn(event.turn)
        elif isinstance(event, RoundStarted):
            await self._round(event)
        elif isinstance(event, Notice):
            text, notice_blocks = blocks.notice_line(event)
            await self.writer.post(text, notice_blocks)
        elif isinstance(event, VerdictReached):
            await self._post_verdict(event.verdict)
        elif isinstance(event, FINAL_EVENTS):
            await self._finish(event.outcome)  # type: ignore[attr-defined]

    async def _round(self, event: RoundStarted) -> None:
        """Progress shows in the root message's status, not as a post that would take a channel
        slot ahead of turn text; turn headers carry their round in the thread."""
        self.round_text = blocks.round_status(event)
        if self._status_task is None or self._status_task.done():
            self._status_task = asyncio.create_task(self._push_status(), name=f"slack-status-{self.spec.id}")

    async def _push_status(self) -> None:
        """Edit the root's status to the newest round; one still waiting when a newer one comes is
        replaced by it, one still waiting when the debate ends is dropped."""
        shown = None

        def build() -> Message | None:
            nonlocal shown
            if self._closing:
                return None
            self._status_sending = True
            shown = self.round_text
            return blocks.root_message(self.spec, "running", shown)

        while not self._closing and shown != self.round_text:
            try:
                await self.writer.edit_message(self.root_ts, build, urgency=Urgency.STATUS)
            finally:
                self._status_sending = False

    async def _stop_status(self) -> None:
        self._closing = True
        task = self._status_task
        if task is not None:
            if not self._status_sending:
                task.cancel()  # still waiting for an update: nothing was sent
            await asyncio.gather(task, return_exceptions=True)

    async def _finish_turn(self, turn: Turn) -> None:
        display = None
        if turn.status == "failed":
            display = f"{turn.text}\n\n:x: _This turn failed: {turn.error or 'no answer'}_".strip()
        elif turn.status == "empty" or not turn.text.strip():
            display = "_(no answer)_"
        message_ids = await self.live.finish(turn, display, wait_for_edits=False)
        for index, ts in enumerate(message_ids):
            key = f"turn:{turn.round}:{turn.seat}:{turn.kind}" + (f":{index}" if index else "")
            await self.store.set_message(self.spec.id, key, PLATFORM, self.spec.channel, ts)

    async def _post_verdict(self, verdict: Verdict) -> None:
        self.verdict = verdict
        tally = await self.store.tally(self.spec.id)  # no votes yet: the buttons come with this post

        def build() -> Message:
            outcome = self._outcome
            self._verdict_final = outcome is not None
            tokens = None if outcome is None else (outcome.input_tokens, outcome.output_tokens)
            return blocks.verdict_message(self.spec, verdict, tally, tokens)

        self.verdict_ts = await self.writer.post_message(build)
        await self.store.set_message(self.spec.id, "verdict", PLATFORM, self.spec.channel, self.verdict_ts)

    async def _finish(self, outcome: Outcome) -> None:
        await self._stop_status()
        text, root_blocks = blocks.final_root(self.spec, outcome, self.verdict)
        # the turns' last edits and the root's final status draw on the same budget: queue them together
        _, edited = await asyncio.gather(self.live.drain(), self.writer.edit(self.root_ts, text, root_blocks),
                                         return_exceptions=True)
        await self.live.aclose()
        if isinstance(edited, BaseException):
            raise edited
        if self.verdict is not None and self.verdict_ts is not None and not self._verdict_final:
            tally = await self.store.tally(self.spec.id)
            tokens = (outcome.input_tokens, outcome.output_tokens)
            text, verdict_blocks = blocks.verdict_message(self.spec, self.verdict, tally, tokens)
            await self.writer.edit(self.verdict_ts, text, verdict_blocks)
