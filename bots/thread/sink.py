"""Renders one debate's events into its thread, whatever the platform: the `Sink` the job is given.

`handle()` only enqueues, so the engine never waits on a platform's pacing; one worker task per debate applies the
events in order: streamed turns (`LiveTurns`), round markers and notices, audience notes, the verdict with its
buttons, and the root message's status. Every message is recorded in the log under its key (`bots.thread.keys`) as
soon as the platform has answered its post, so a restarted front can replay a debate's whole stream into a sink
opened with `resume` and post nothing twice.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bots.thread.coalesce import Latest, Paced, Withheld
from bots.thread.intents import PostIntents
from bots.thread.keys import (
    PENDING,
    ROOT,
    ended_key,
    interjection_key,
    message_key,
    notice_key,
    root_key,
    round_key,
    verdict_key,
)
from bots.thread.live import LiveTurns
from bots.thread.pacing import Pacer, Urgency
from bots.thread.surface import Ended, Running, Surface
from orchestrator.events import (
    FINAL_EVENTS,
    DebateCancelled,
    DebateContinued,
    EventBase,
    EvidenceChecked,
    Interjected,
    Notice,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    VerdictReached,
    until_written,
)
from orchestrator.log import DebateLog, DebateNotFoundError, MessageRecord
from orchestrator.logs import about_debate
from orchestrator.metrics import count_backlog
from orchestrator.models import DebateSpec, Interjection, Outcome, Verdict

log = logging.getLogger(__name__)
VERDICT_GRACE = 2.0  # seconds a verdict's post waits for the debate's end, to carry its token counts


class ThreadSink:
    """One debate's thread. Many debates may share a channel's and a workspace's budgets, so they go to what
    readers wait for: the worker moves on once a finished turn's messages exist (its final edit follows in the
    background), round progress is the least urgent, and the verdict waits up to VERDICT_GRACE for the final
    event so it posts with its token counts. The root's status is a `Latest` (progress coalesces, the final state
    lands). Each message is recorded final once it shows its final text; the root last."""

    def __init__(self, surface: Surface[Any], pacer: Pacer, store: DebateLog, spec: DebateSpec, root_id: str,
                 recorded: dict[str, MessageRecord] | None = None, *, segment: int = 1) -> None:
        """Prefer `open` (a new thread: it records the root message first) or `resume`. `recorded` may
        hold keys still PENDING (posts whose answer never came: `bots.thread.intents` looks them up)."""
        self.surface = surface
        self.store = store
        self.spec = spec
        self.root_id = root_id
        self.segment = segment  # 2, 3, …: the thread renders that continuation of the debate
        self.root_key = root_key(segment)  # final once the root shows this segment's end
        self.verdict_key = verdict_key(segment)
        self.ended_key = ended_key(segment)
        given = dict(recorded or {})
        self.recorded: dict[str, MessageRecord] = {k: m for k, m in given.items() if m.message_id != PENDING}
        self.intents = PostIntents(store, spec.id, surface, {k for k, m in given.items() if m.message_id == PENDING})
        self._unsaved: dict[str, MessageRecord] = {}  # recorded here, not yet in the log (it refused the write)
        self.out: Paced[Any] = Paced(surface, pacer, self.intents)
        self.live = LiveTurns(self.out, spec, self._record, first_post_grace=pacer.limits.first_post_grace,
                              placeholder_after=pacer.limits.placeholder_after, on_final=self._record_final,
                              recorded=self.recorded)
        self.status: Latest[Any] = Latest(self.out, root_id, in_thread=False)
        self.verdict: Verdict | None = None
        self.verdict_id: str | None = None
        self._outcome: Outcome | None = None  # known as soon as the final event is queued
        self._verdict_final = False  # the verdict was posted with the debate's token counts
        self._ended = asyncio.Event()  # the final event has been queued
        self._last_turn: tuple[int, str, str] | None = None  # (round, seat, kind) of the turn posted last
        self._queue: asyncio.Queue[EventBase] = asyncio.Queue()
        self._worker = asyncio.create_task(self._run(), name=f"thread-sink-{spec.id}")
        uncount = count_backlog(self._queue.qsize)  # the queue is in the metrics' render backlog while it works
        self._worker.add_done_callback(lambda _: uncount())

    @classmethod
    async def open(cls, surface: Surface[Any], pacer: Pacer, store: DebateLog, spec: DebateSpec,
                   root_id: str) -> ThreadSink:
        """Record the debate's root message under `root`, then start rendering its events."""
        await store.set_message(spec.id, ROOT, surface.platform, surface.root_channel, root_id)
        root = MessageRecord(key=ROOT, platform=surface.platform, channel=surface.root_channel, message_id=root_id)
        return cls(surface, pacer, store, spec, root_id, {ROOT: root})

    @classmethod
    async def resume(cls, surface: Surface[Any], pacer: Pacer, store: DebateLog, spec: DebateSpec, *,
                     segment: int = 1) -> ThreadSink:
        """Go on rendering a thread another sink (another process, before a restart) began: its messages
        come from the log. Feed it the events of the debate's `segment` from the start (2, 3, …: a
        continuation, rendered into the same thread: its root shows it running, then its result, and its
        verdict is a new message). LookupError: no root message. A message that exists is edited, never
        posted again, and one recorded final is left alone."""
        recorded = await store.messages(spec.id)
        root = recorded.get(ROOT)
        if root is None:
            raise LookupError(f"debate {spec.id} has no root message recorded")
        key = root_key(segment)
        if key not in recorded:  # the root showed an earlier segment's end: this one's is still to show
            await store.set_message(spec.id, key, root.platform or surface.platform, root.channel, root.message_id)
            recorded[key] = root.model_copy(update={"key": key, "final": False})
        return cls(surface, pacer, store, spec, root.message_id, recorded, segment=segment)

    @property
    def outcome(self) -> Outcome | None:
        """How the debate (this segment) ended, once its final event has come."""
        return self._outcome

    @property
    def root_final(self) -> bool:
        """The root message shows how the debate (this segment of it) ended, recorded so: the thread is complete."""
        root = self.recorded.get(self.root_key)
        return root is not None and root.final

    async def handle(self, event: EventBase) -> None:
        if isinstance(event, FINAL_EVENTS):
            if self._outcome is not None and self._outcome.status == "cancelled":
                return  # stopped: nothing else ends it
            self._outcome = event.outcome  # type: ignore[attr-defined]
            self._ended.set()
        if isinstance(event, DebateCancelled):
            self._stopped()
        self._queue.put_nowait(event)

    def _stopped(self) -> None:
        """The debate was stopped: the thread gets the notice that says so and nothing else new. What was
        written and not yet shown stays in the log (the page and `show` have it); edits finishing a message
        already posted still land."""
        self.out.withhold()
        while not self._queue.empty():
            self._queue.get_nowait()

    async def wait_closed(self) -> None:
        """Until the final event has been rendered (or the worker was cancelled); never raises."""
        await asyncio.gather(self._worker, return_exceptions=True)

    async def aclose(self) -> None:
        self._worker.cancel()
        await self.wait_closed()
        await self.status.aclose()
        await self.live.aclose()

    async def _run(self) -> None:
        with about_debate(self.spec.id, self.spec.workspace):
            await self._render()

    async def _render(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._apply(event)
            except Withheld:  # stopped meanwhile: its post is not made
                log.debug("%s: debate %s stopped; %s not shown", self.surface.platform, self.spec.id,
                          type(event).__name__)
            except Exception:  # one failed render must not stop the rest of the thread
                log.exception("%s: rendering %s for debate %s failed", self.surface.platform,
                              type(event).__name__, self.spec.id)
            if isinstance(event, FINAL_EVENTS):
                return

    async def _apply(self, event: EventBase) -> None:
        if isinstance(event, TextDelta):
            self.live.feed(event)
        elif isinstance(event, TurnStarted):
            self._last_turn = (event.round, event.seat, event.kind)
            await self.live.begin(event)
        elif isinstance(event, TurnCompleted | TurnFailed):
            await self.live.finish(event.turn, self.surface.turn_ending(event.turn), wait_for_edits=False,
                                   take=event.take)
        elif isinstance(event, EvidenceChecked):  # one line of counts under the turn (no quoted text)
            shown = Notice(debate_id=event.debate_id, text=event.line_after(self._last_turn))
            for part, message in enumerate(self.surface.notice(shown)):
                await self._post_once(message_key(event.key, part), message)
        elif isinstance(event, RoundStarted):
            await self._round(event)
        elif isinstance(event, Notice):
            if event.with_verdict:
                return  # the verdict message says it: a post of its own would only delay the verdict
            for part, message in enumerate(self.surface.notice(event)):
                await self._post_once(notice_key(event.level, event.text, part), message)
        elif isinstance(event, Interjected):
            shown = Notice(debate_id=event.debate_id, text=interjection_text(event.interjection))
            for part, message in enumerate(self.surface.notice(shown)):
                await self._post_once(interjection_key(event.interjection.id, part), message)
        elif isinstance(event, DebateContinued):
            self._status(Running(), Urgency.STATUS)
        elif isinstance(event, VerdictReached):
            await self._post_verdict(event.verdict)
        elif isinstance(event, FINAL_EVENTS):
            await self._finish(event.outcome)  # type: ignore[attr-defined]

    async def _record(self, key: str, message_id: str, *, final: bool = False, in_thread: bool = True) -> None:
        """Remember `key`'s message here and in the log. A log that refuses the write now (locked, full)
        does not stop the thread: the record is kept and written before the thread is finished (`_save`);
        meanwhile the key's PENDING intent, where the surface has one, keeps a restart from posting it again."""
        channel = self.surface.thread_channel if in_thread else self.surface.root_channel
        record = MessageRecord(key=key, platform=self.surface.platform, channel=channel, message_id=message_id,
                               final=final)
        self.recorded[key] = record
        self._unsaved.pop(key, None)
        try:
            await self.store.set_message(self.spec.id, key, self.surface.platform, channel, message_id, final=final)
        except Exception:
            log.warning("%s: message %s of debate %s not recorded yet; kept to record later", self.surface.platform,
                        key, self.spec.id, exc_info=True)
            self._unsaved[key] = record

    async def _save(self) -> None:
        """Write every record the log refused so far, retrying until it takes them."""
        async def write() -> None:
            for key, record in list(self._unsaved.items()):
                await self.store.set_message(self.spec.id, key, record.platform or self.surface.platform,
                                             record.channel, record.message_id, final=record.final)
                if self._unsaved.get(key) is record:
                    del self._unsaved[key]

        if self._unsaved:
            # a debate no longer in the log (purged) takes no record, however long one waits
            await until_written(write, f"recording the messages of debate {self.spec.id}",
                                gives_up=(DebateNotFoundError,))

    async def _record_final(self, key: str, message_id: str) -> None:
        await self._record(key, message_id, final=True)

    async def _post_once(self, key: str, message: Any, *, after_stop: bool = False) -> None:
        """Post a message that never changes, unless the thread has it already."""
        if key in self.recorded:
            return
        await self.out.post(lambda: message, Urgency.REPLY, key=key, after_stop=after_stop,
                            record=lambda message_id, _posted: self._record_final(key, message_id))

    def _status(self, state: Running | Ended, urgency: Urgency) -> None:
        if not self.root_final:
            self.status.set(lambda: self.surface.root(self.spec, state), urgency)

    async def _round(self, event: RoundStarted) -> None:
        marker = self.surface.round(event)
        if marker is not None:
            await self._post_once(round_key(event.round), marker)
        self._status(Running(event), Urgency.STATUS)

    async def _post_verdict(self, verdict: Verdict) -> None:
        if self.verdict is not None:
            return  # a repeat
        self.verdict = verdict
        if (posted := self.recorded.get(self.verdict_key)) is not None:  # a resumed thread: edited at the end if due
            self.verdict_id = posted.message_id
            self._verdict_final = posted.final
            return
        tally = await self.store.tally(self.spec.id)  # no votes yet: the buttons come with this post
        ended = asyncio.ensure_future(self._ended.wait())
        try:
            await asyncio.wait({ended}, timeout=VERDICT_GRACE)
        finally:
            ended.cancel()

        def render() -> Any:
            outcome = self._outcome
            self._verdict_final = outcome is not None
            return self.surface.verdict(self.spec, verdict, tally, outcome)

        async def record(message_id: str, posted: bool) -> None:
            self.verdict_id = message_id
            self._verdict_final = self._verdict_final and posted  # found: shown as an earlier post had it
            await self._record(self.verdict_key, message_id, final=self._verdict_final)

        await self.out.post(render, Urgency.REPLY, record=record, key=self.verdict_key)

    async def _finish(self, outcome: Outcome) -> None:
        if self.verdict is None and (ended := self.surface.ended(outcome)) is not None:
            try:
                await self._post_once(self.ended_key, ended, after_stop=True)
            except Exception:  # a thread that is gone must not keep the root from showing the end
                log.warning("%s: the end of debate %s could not be posted in its thread", self.surface.platform,
                            self.spec.id, exc_info=True)
        self.live.cut_off()  # turns the end interrupted show what they had, without the streaming cursor
        tally = await self.store.tally(self.spec.id)
        self._status(Ended(outcome, self.verdict, tally), Urgency.REPLY)
        # the turns' last edits and the root's final status draw on the same budgets: queue them together
        await asyncio.gather(self.live.drain(), self.status.flush())
        await self.live.aclose()
        await self.status.aclose()
        verdict = self.verdict
        if verdict is not None and self.verdict_id is not None and not self._verdict_final:
            tally = await self.store.tally(self.spec.id)
            await self.out.edit(self.verdict_id, lambda: self.surface.verdict(self.spec, verdict, tally, outcome),
                                Urgency.REPLY)
            self._verdict_final = True
            await self._record(self.verdict_key, self.verdict_id, final=True)
        await self._save()
        if not self.root_final and not self.status.failed:
            await self._record(self.root_key, self.root_id, final=True, in_thread=False)
            await self._save()


def interjection_text(note: Interjection) -> str:
    """How an audience note shows in the thread: who sent it, for which round, quoted (the surface's
    notice look makes it inert)."""
    where = f"round {note.round}" if note.round is not None else "the next round"
    said = "New facts" if note.kind == "facts" else "Audience note"
    return f"{said} from {note.author}, for {where}: “{note.text}”"
