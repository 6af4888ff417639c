"""Renders one debate's events into its Slack thread.

`handle()` only enqueues, so the engine never waits on Slack's pacing; one worker task per debate
applies the events in order: progress lines, streamed turns (LiveTurns over SlackThreadWriter),
notices, the verdict with its buttons, and the root message's final status. Every message a turn
or verdict became is recorded in the store (`set_message`).
"""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.web.async_client import AsyncWebClient

from bots.live import LiveTurns
from bots.slack import blocks
from bots.slack.pacing import Pacer
from bots.slack.writer import SlackThreadWriter
from bots.text import neutralize_slack
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
from orchestrator.models import DebateSpec, Outcome, Turn, Verdict
from orchestrator.store import Store

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
        self.live = LiveTurns(self.writer, blocks.turn_header, neutralize_slack)
        self.verdict: Verdict | None = None
        self.verdict_ts: str | None = None
        self.round_text = ""
        self._queue: asyncio.Queue[EventBase] = asyncio.Queue()
        self._worker = asyncio.create_task(self._run(), name=f"slack-sink-{spec.id}")

    async def handle(self, event: EventBase) -> None:
        self._queue.put_nowait(event)

    async def wait_closed(self) -> None:
        """Until the final event has been rendered (or the worker was cancelled)."""
        await asyncio.gather(self._worker, return_exceptions=True)

    async def aclose(self) -> None:
        self._worker.cancel()
        await self.wait_closed()
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
        line = blocks.round_line(event)
        await self.writer.post(line)
        self.round_text = f"round {event.round} of {event.total}"
        text, root_blocks = blocks.root_message(self.spec, "running", self.round_text)
        await self.writer.edit(self.root_ts, text, root_blocks)

    async def _finish_turn(self, turn: Turn) -> None:
        display = None
        if turn.status == "failed":
            display = f"{turn.text}\n\n:x: _This turn failed: {turn.error or 'no answer'}_".strip()
        elif turn.status == "empty" or not turn.text.strip():
            display = "_(no answer)_"
        message_ids = await self.live.finish(turn, display)
        for index, ts in enumerate(message_ids):
            key = f"turn:{turn.round}:{turn.seat}:{turn.kind}" + (f":{index}" if index else "")
            await self.store.set_message(self.spec.id, key, PLATFORM, self.spec.channel, ts)

    async def _post_verdict(self, verdict: Verdict) -> None:
        self.verdict = verdict
        text, verdict_blocks = blocks.verdict_message(self.spec, verdict, await self.store.tally(self.spec.id))
        self.verdict_ts = await self.writer.post(text, verdict_blocks)
        await self.store.set_message(self.spec.id, "verdict", PLATFORM, self.spec.channel, self.verdict_ts)

    async def _finish(self, outcome: Outcome) -> None:
        await self.live.aclose()
        winner = blocks.winner_text(self.spec, self.verdict) if self.verdict else None
        text, root_blocks = blocks.root_message(self.spec, outcome.status, blocks.outcome_detail(outcome, winner))
        await self.writer.edit(self.root_ts, text, root_blocks)
        if self.verdict is not None and self.verdict_ts is not None:
            tally = await self.store.tally(self.spec.id)
            tokens = (outcome.input_tokens, outcome.output_tokens)
            text, verdict_blocks = blocks.verdict_message(self.spec, self.verdict, tally, tokens)
            await self.writer.edit(self.verdict_ts, text, verdict_blocks)
