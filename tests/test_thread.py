"""The live thread written once (`bots.thread`), driven through a recording surface and a real SQLite log.

The surface here is our own protocol's stand-in, not a platform's: what each platform's surface makes of
these calls is tested against the Slack and Discord peers (test_slack_*, test_discord*). These tests pin
what every platform shares: late rendering, deferred first posts, the coalesced root status, and the
message keys recorded as soon as each message exists.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

from bots.thread import Ended, Latest, Limits, LiveTurns, Paced, Pacer, RootState, ThreadSink, Urgency, turn_key
from orchestrator.events import DebateFinished, TextDelta, TurnCompleted, TurnStarted, VerdictReached
from orchestrator.log import Store, Tally
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict

CHANNEL = "C"
# one write at a time in the channel, edits included: holding it (`busy`) stands for a spent budget
LIMITS = Limits(channel_writes=1, channel_window=0.001, edit_interval=0.02, edits_use_channel=True)
SPEC = DebateSpec(topic="Tabs or spaces?", rounds=1, judge="openai:judge",
                  seats=(Seat(label="A", role="proposer", model="openai:a"),
                         Seat(label="B", role="challenger", model="openai:b")))


class _Surface:
    """Records every post and edit; with `db`, checks before each post that every message posted
    before it is already in the log."""

    platform = "test"
    root_channel = thread_channel = CHANNEL

    def __init__(self, stream_limit: int = 3500, db: Path | None = None) -> None:
        self.stream_limit = stream_limit
        self.db = db
        self.messages: dict[str, str] = {}
        self.log: list[tuple[str, str, str]] = []
        self.unrecorded: list[str] = []  # messages not in the log when the next post went
        self._wrote = asyncio.Event()

    async def written(self, count: int) -> None:
        while len(self.log) < count:
            self._wrote.clear()
            await self._wrote.wait()

    def _logged_ids(self) -> set[str]:
        assert self.db is not None
        with closing(sqlite3.connect(self.db)) as db:
            return {row[0] for row in db.execute("select message_id from messages")}

    async def post(self, message: str, *, in_thread: bool = True) -> str:
        if self.db is not None:
            self.unrecorded += [m for m in self.messages if m not in self._logged_ids()]
        message_id = f"m{len(self.messages)}"
        self.messages[message_id] = message
        self.log.append(("post", message_id, message))
        self._wrote.set()
        return message_id

    async def edit(self, message_id: str, message: str, *, in_thread: bool = True) -> None:
        self.messages[message_id] = message
        self.log.append(("edit", message_id, message))
        self._wrote.set()

    def root(self, spec: DebateSpec, state: RootState) -> str:
        return f"root: {state.outcome.status}" if isinstance(state, Ended) else f"root: round {state.round}"

    def round(self, event: Any) -> str | None:
        return None

    def turn_header(self, event: TurnStarted) -> str:
        return f"*{event.seat}*"

    def neutralize(self, text: str) -> str:
        return text

    def turn(self, seat: Seat, chunk: str) -> str:
        return chunk

    def turn_ending(self, turn: Turn) -> str | None:
        return None

    def notice(self, event: Any) -> list[str]:
        return [event.text]

    def verdict(self, spec: DebateSpec, verdict: Verdict, tally: Tally, outcome: Outcome | None) -> str:
        return f"verdict: {verdict.winner}" + ("" if outcome is None else f", {outcome.output_tokens} tokens")

    def ended(self, outcome: Outcome) -> str | None:
        return None


@asynccontextmanager
async def busy(pacer: Pacer, channel: str = CHANNEL) -> AsyncIterator[None]:
    """The channel's only write is held by someone else until the block ends."""
    held, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with pacer.posting(channel):
            held.set()
            await release.wait()

    holder = asyncio.create_task(hold())
    await held.wait()
    try:
        yield
    finally:
        release.set()
        await holder


def _started(seat: str = "A") -> TurnStarted:
    return TurnStarted(debate_id=SPEC.id, round=1, seat=seat, role="proposer", kind="opening", model="m")


def _delta(text: str, seat: str = "A", offset: int = 0) -> TextDelta:
    return TextDelta(debate_id=SPEC.id, round=1, seat=seat, kind="opening", delta=text, offset=offset)


def _turn(text: str, seat: str = "A") -> Turn:
    return Turn(debate_id=SPEC.id, round=1, seat=seat, role="proposer", kind="opening", model="m", text=text)


def _live(surface: _Surface, pacer: Pacer, recorded: list[tuple[str, str]], **timing: float) -> LiveTurns:
    async def record(key: str, message_id: str) -> None:
        recorded.append((key, message_id))

    return LiveTurns(Paced(surface, pacer), SPEC, record, **timing)


async def test_a_deferred_turn_is_first_shown_by_a_post_that_carries_its_text() -> None:
    surface, pacer = _Surface(), Pacer(LIMITS)
    live = _live(surface, pacer, [], first_post_grace=0.05, placeholder_after=5.0)
    await live.begin(_started())
    await asyncio.sleep(0.03)
    assert surface.log == [], "nothing is posted before the turn has text"
    async with busy(pacer):  # the channel is busy: the post waits, and text keeps arriving
        live.feed(_delta("Evidence "))
        await asyncio.sleep(0.1)
        live.feed(_delta("first, then opinion.", offset=len("Evidence ")))
    await surface.written(1)
    assert surface.log[0] == ("post", "m0", "*A*\nEvidence first, then opinion. ▍"), "rendered when it could go"

    async with busy(pacer):  # the final edit waits for the budget; the worker need not
        ids = await live.finish(_turn("Evidence first, then opinion. Done."), wait_for_edits=False)
        assert ids == ["m0"] and surface.messages["m0"].endswith("▍")
    await live.drain()
    assert surface.messages == {"m0": "*A*\nEvidence first, then opinion. Done."}


async def test_a_turn_that_ends_before_its_first_post_needs_no_edit_and_a_slow_one_gets_a_placeholder() -> None:
    surface, recorded = _Surface(), []
    live = _live(surface, Pacer(LIMITS), recorded, first_post_grace=0.05, placeholder_after=0.05)
    await live.begin(_started("A"))
    live.feed(_delta("Short."))
    assert await live.finish(_turn("Short.")) == ["m0"]
    assert surface.log == [("post", "m0", "*A*\nShort.")]

    await live.begin(_started("B"))
    await asyncio.sleep(0.1)  # no text yet: the placeholder shows the turn has begun
    assert surface.log[1] == ("post", "m1", "*B*\n_…_")
    live.feed(_delta("Late but here.", "B"))
    await live.finish(_turn("Late but here.", "B"))
    assert surface.messages["m1"] == "*B*\nLate but here."
    assert recorded == [("turn:1:A:opening:0", "m0"), ("turn:1:B:opening:0", "m1")]
    await live.aclose()


async def test_a_post_that_shows_the_final_text_is_recorded_once_as_final_and_a_streamed_one_twice() -> None:
    surface, pacer, writes = _Surface(), Pacer(LIMITS), []

    async def posted(key: str, message_id: str) -> None:
        writes.append((key, message_id, False))

    async def final(key: str, message_id: str) -> None:
        writes.append((key, message_id, True))

    live = LiveTurns(Paced(surface, pacer), SPEC, posted, first_post_grace=0.05, on_final=final)
    await live.begin(_started("A"))
    async with busy(pacer):  # the post waits for the channel while the turn ends: it shows the final text
        live.feed(_delta("Short and done."))
        ending = asyncio.create_task(live.finish(_turn("Short and done.")))
        await asyncio.sleep(0.1)
    assert await ending == ["m0"]
    assert surface.log == [("post", "m0", "*A*\nShort and done.")]

    await live.begin(_started("B"))
    live.feed(_delta("Streaming into the thread now, word by word.", "B"))
    await surface.written(2)  # posted while the turn still streams: recorded, then final once it shows the end
    await live.finish(_turn("Streaming into the thread now, word by word. The end.", "B"))
    assert writes == [("turn:1:A:opening:0", "m0", True),
                      ("turn:1:B:opening:0", "m1", False), ("turn:1:B:opening:0", "m1", True)]
    await live.aclose()


async def test_status_edits_coalesce_and_the_last_one_lands() -> None:
    surface, pacer = _Surface(), Pacer(LIMITS)
    status = Latest(Paced(surface, pacer), "root", in_thread=False)
    async with busy(pacer):  # someone else holds the channel's only write
        for i in range(5):
            status.set(lambda i=i: f"progress {i}")
        status.set(lambda: "final", Urgency.REPLY)
        await asyncio.sleep(0)
    await status.flush()
    assert surface.log == [("edit", "root", "final")]
    assert status.dropped == 5

    status.set(lambda: "again")
    await status.flush()
    assert [text for _, _, text in surface.log] == ["final", "again"]


async def test_every_message_is_recorded_under_its_key_before_the_next_is_posted(tmp_path: Path) -> None:
    async with Store(tmp_path / "log.db") as store:
        await store.create_debate(SPEC)
        surface = _Surface(stream_limit=60, db=tmp_path / "log.db")
        sink = await ThreadSink.open(surface, Pacer(LIMITS), store, SPEC, "r0")
        long_text = "Evidence first, then opinion, then more evidence. " * 4  # several 60-character parts
        for seat in ("A", "B"):
            await sink.handle(_started(seat))
            await sink.handle(_delta(long_text, seat))
            await sink.handle(TurnCompleted(debate_id=SPEC.id, turn=_turn(long_text, seat)))
        await sink.handle(VerdictReached(debate_id=SPEC.id, verdict=Verdict(winner="A")))
        outcome = Outcome(status="completed", rounds_completed=1, rounds_planned=1, input_tokens=5, output_tokens=7)
        await sink.handle(DebateFinished(debate_id=SPEC.id, outcome=outcome))
        await sink.wait_closed()

        posts = [(message_id, text) for kind, message_id, text in surface.log if kind == "post"]
        b_starts = next(i for i, (_, text) in enumerate(posts) if text.startswith("*B*"))
        # a turn's messages all exist before the next turn begins: A's parts, then B's, then the verdict
        parts = {"A": [m for m, _ in posts[:b_starts]], "B": [m for m, _ in posts[b_starts:-1]]}
        assert len(parts["A"]) >= 3 and len(parts["B"]) >= 3
        expected = {"root": "r0", "verdict": posts[-1][0]}
        for seat, ids in parts.items():
            expected |= {turn_key(1, seat, "opening", index): message_id for index, message_id in enumerate(ids)}
        assert {key: await store.get_message(SPEC.id, key) for key in expected} == expected
        assert surface.unrecorded == [], "a message was posted before the one before it was in the log"
        assert surface.messages[posts[-1][0]] == "verdict: A, 7 tokens"  # the outcome was known when it went
        assert [text for kind, m, text in surface.log if m == "r0"] == ["root: completed"]

