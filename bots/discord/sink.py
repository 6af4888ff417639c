"""Renders one debate's events into its Discord thread, from its own task so the engine never waits.

Turns stream through `bots.thread.live.LiveTurns` (one per seat, each message an embed in the seat's colour);
rounds and notices are plain messages; the verdict waits for the final event so it can carry the token
count, then goes up once with its vote and quote buttons. The root message in the channel shows progress.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import discord

from bots.discord.buttons import verdict_view
from bots.discord.render import ended_embed, final_status, root_embed, turn_header, verdict_embed
from bots.discord.writer import CONTENT_LIMIT, ChannelPacers, ChannelWriter, LatestEdit, Priority, SeatWriter
from bots.thread.live import LiveTurns
from bots.thread.text import neutralize_discord, split_message
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
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict

log = logging.getLogger(__name__)
PLATFORM = "discord"


@dataclass(frozen=True)
class Pacing:
    """Write pacing; Discord's real limits by default, faster only in tests."""

    min_edit_interval: float = 1.2
    channel_writes: int = 5
    channel_window: float = 5.0


class ThreadSink:
    """A `Sink` for one debate: queues events and renders them into `thread` in order."""

    def __init__(
        self,
        *,
        store: Store,
        spec: DebateSpec,
        thread: discord.Thread,
        root: discord.PartialMessage,
        notes: list[str],
        pacing: Pacing,
        pacers: ChannelPacers,
    ) -> None:
        """`pacers` is the bot's: the thread's pacer and the parent channel's are shared with every
        other writer there (other debates' root edits, thread creation, quotes)."""
        self.store = store
        self.spec = spec
        self.thread = thread
        self.notes = notes
        self.pacing = pacing
        self._thread_pacer = pacers(thread.id)
        self._out = ChannelWriter(thread, self._thread_pacer)
        self._status = LatestEdit(root, pacers(root.channel.id))
        self._lives: dict[str, LiveTurns] = {}
        self._verdict: Verdict | None = None
        self._queue: asyncio.Queue[EventBase] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name=f"discord-sink-{spec.id}")

    async def handle(self, event: EventBase) -> None:
        self._queue.put_nowait(event)

    async def wait_closed(self) -> None:
        await asyncio.shield(self._task)

    async def _run(self) -> None:
        try:
            while True:
                event = await self._queue.get()
                try:
                    await self._render(event)
                except Exception:  # one failed render must not stop the rest of the thread
                    log.exception("discord: could not render %s for debate %s", type(event).__name__, self.spec.id)
                if isinstance(event, FINAL_EVENTS):
                    return
        finally:
            await asyncio.gather(*(live.aclose() for live in self._lives.values()), return_exceptions=True)

    async def _render(self, event: EventBase) -> None:
        if isinstance(event, TextDelta):
            live = self._lives.get(event.seat)
            if live is not None:
                live.feed(event)
        elif isinstance(event, TurnStarted):
            await self._live(event).begin(event)
        elif isinstance(event, TurnCompleted | TurnFailed):
            await self._finish_turn(event.turn, failed=isinstance(event, TurnFailed))
        elif isinstance(event, RoundStarted):
            await self._round(event)
        elif isinstance(event, Notice):
            await self._notice(event)
        elif isinstance(event, VerdictReached):
            self._verdict = event.verdict
        elif isinstance(event, FINAL_EVENTS):
            await self._final(event.outcome)  # type: ignore[attr-defined]

    def _live(self, event: TurnStarted) -> LiveTurns:
        if event.seat not in self._lives:
            try:
                seat = self.spec.seat(event.seat)
            except KeyError:  # the judge or a summarizer: not a debater's chair, same rendering
                role = event.role if event.role in ("proposer", "challenger", "debater", "judge") else "judge"
                seat = Seat(label=event.seat, role=role, model=event.model)  # type: ignore[arg-type]
            writer = SeatWriter(self.thread, seat, self._thread_pacer, self.pacing.min_edit_interval)
            self._lives[event.seat] = LiveTurns(writer, turn_header, neutralize_discord)
        return self._lives[event.seat]

    async def _finish_turn(self, turn: Turn, *, failed: bool) -> None:
        live = self._lives.get(turn.seat)
        if live is None:
            return
        display = None
        if failed:
            display = f"⚠️ This turn failed: {turn.error or 'no answer'}"
            if turn.text:
                display = f"{turn.text}\n\n{display}"
        message_ids = await live.finish(turn, display)
        if message_ids:
            key = f"turn:{turn.round}:{turn.seat}:{turn.kind}"
            await self.store.set_message(self.spec.id, key, PLATFORM, str(self.thread.id), message_ids[0])

    async def _round(self, event: RoundStarted) -> None:
        title = f" · {event.title}" if event.title else ""
        progress = f"Round {event.round} of {event.total}{title}"
        await self._out.send(content=f"**{neutralize_discord(progress)}**")
        self._set_status(f"⏳ {progress}")

    async def _notice(self, event: Notice) -> None:
        icon = "⚠️" if event.level == "warning" else "ℹ️"
        for chunk in split_message(f"{icon} {neutralize_discord(event.text)}", CONTENT_LIMIT):
            await self._out.send(content=chunk)

    async def _final(self, outcome: Outcome) -> None:
        await asyncio.gather(*(live.aclose() for live in self._lives.values()))
        if self._verdict is not None:
            tally = await self.store.tally(self.spec.id)
            embed = verdict_embed(self.spec, self._verdict, outcome, tally)
            message = await self._out.send(embed=embed, view=verdict_view(self.spec))
            await self.store.set_message(self.spec.id, "verdict", PLATFORM, str(self.thread.id), str(message.id))
            self._set_status(final_status(outcome, embed), final=True)
        else:
            await self._out.send(embed=ended_embed(outcome))
            self._set_status(final_status(outcome), final=True)
        await self._status.flush()  # the sink is done only when the root message shows how it ended

    def _set_status(self, status: str, *, final: bool = False) -> None:
        """Show `status` on the root message without holding up the thread.

        The root messages of every debate in a channel share that channel's 5 writes per 5 s, so a
        progress state still waiting when a newer one arrives is dropped; the final state always lands.
        """
        embed = root_embed(self.spec, status=status, notes=self.notes)
        self._status.set(Priority.NORMAL if final else Priority.PROGRESS, embed=embed)
