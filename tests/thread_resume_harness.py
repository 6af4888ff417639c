"""What test_thread_resume.py shares with other test modules, moved here so that no test module imports another:
`A_TEXT`, `CHANNEL`, `FAST_SLACK`, `VERDICT_TEXT`, `_feed`, `_slack_root`, `_slack_turn`,
`assert_slack_thread_once`, `at_least_once`, `debate_events`, `spec_for`."""

from __future__ import annotations

import json

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.blocks import turn_header as slack_header
from bots.slack.markdown import neutralize_markdown
from bots.slack.surface import slack_limits
from bots.thread import ROOT, VERDICT, ThreadSink, turn_key
from bots.thread.keys import notice_key
from orchestrator.events import (
    DebateFinished,
    DebateStarted,
    EventBase,
    Notice,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnStarted,
    VerdictReached,
)
from orchestrator.log import Store
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict
from tests.fakes.slack_api import SlackAPIPeer

FAST_SLACK = slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05)


CHANNEL = "C1"


A_TEXT = "Evidence first: the p99 fell from 80 ms to 12 ms once the cache sat at the edge. " * 3


B_DROPPED = "A first attempt that the restart threw away, "


B_TEXT = "Rebuttal: caches hide bugs until the day they do not, and then they hide the fix too. " * 2


NOTICE = "The question, distilled: should the cache sit at the edge?"


VERDICT_TEXT = Verdict(winner="A", reasoning="A gave numbers.", recommendation="Put the cache at the edge.")


def spec_for(platform: str) -> DebateSpec:
    return DebateSpec(topic="Cache at the edge?", rounds=1, judge="openai:judge", platform=platform, channel=CHANNEL,
                      seats=(Seat(label="A", role="proposer", model="openai:a"),
                             Seat(label="B", role="challenger", model="anthropic:b")))


def _started(spec: DebateSpec, seat: Seat) -> TurnStarted:
    return TurnStarted(debate_id=spec.id, round=1, seat=seat.label, role=seat.role, kind="opening", model=seat.model)


def _deltas(spec: DebateSpec, seat: str, text: str, attempt: str, size: int = 37) -> list[EventBase]:
    return [TextDelta(debate_id=spec.id, round=1, seat=seat, kind="opening", delta=text[at:at + size],
                      attempt=attempt, offset=at) for at in range(0, len(text), size)]


def _done(spec: DebateSpec, seat: Seat, text: str) -> TurnCompleted:
    return TurnCompleted(debate_id=spec.id, turn=Turn(debate_id=spec.id, round=1, seat=seat.label, role=seat.role,
                                                      kind="opening", model=seat.model, text=text, output_tokens=40))


def debate_events(spec: DebateSpec) -> list[EventBase]:
    """One debate as its stream has it; seat B's model call ran twice (attempt b1 was cut off)."""
    a, b = spec.seats
    return [
        DebateStarted(debate_id=spec.id, spec=spec),
        RoundStarted(debate_id=spec.id, round=1, total=1, title="Openings"),
        Notice(debate_id=spec.id, text=NOTICE),
        _started(spec, a), *_deltas(spec, "A", A_TEXT, "a1"), _done(spec, a, A_TEXT),
        _started(spec, b), *_deltas(spec, "B", B_DROPPED, "b1"), *_deltas(spec, "B", B_TEXT, "b2"),
        _done(spec, b, B_TEXT),
        VerdictReached(debate_id=spec.id, verdict=VERDICT_TEXT),
        DebateFinished(debate_id=spec.id, outcome=Outcome(status="completed", rounds_completed=1, rounds_planned=1,
                                                          input_tokens=10, output_tokens=80)),
    ]


def at_least_once(events: list[EventBase]) -> list[EventBase]:
    """Every event twice in a row, then the whole debate again (a reader that started over)."""
    return [e for e in events[:-1] for _ in range(2)] + events


async def _feed(sink: ThreadSink, events: list[EventBase]) -> None:
    for event in events:
        await sink.handle(event)


async def _slack_root(client: AsyncWebClient, spec: DebateSpec) -> str:
    return str((await client.chat_postMessage(channel=CHANNEL, text=f"Debate: {spec.topic}"))["ts"])


def _slack_turn(spec: DebateSpec, seat: Seat, text: str) -> str:
    return f"{slack_header(_started(spec, seat))}\n{neutralize_markdown(text)}"


async def assert_slack_thread_once(peer: SlackAPIPeer, store: Store, spec: DebateSpec, root_ts: str) -> None:
    """One message per turn, notice and verdict, each the one recorded for it, final, showing its final text."""
    a, b = spec.seats
    recorded = await store.messages(spec.id)
    keys = {ROOT, turn_key(1, "A", "opening", 0), turn_key(1, "B", "opening", 0), notice_key("info", NOTICE, 0),
            VERDICT}
    assert set(recorded) == keys
    assert all(m.final for m in recorded.values()), [m for m in recorded.values() if not m.final]
    thread = peer.thread(CHANNEL, root_ts)
    posts = [c for c in peer.of("chat.postMessage") if c.ok and c.params.get("thread_ts") == root_ts]
    assert len(posts) == len(thread) == 4, [m.text for m in thread]
    assert {m.ts for m in thread} == {m.message_id for k, m in recorded.items() if k != ROOT}
    assert peer.message(CHANNEL, recorded[turn_key(1, "A", "opening", 0)].message_id).markdown == \
        _slack_turn(spec, a, A_TEXT)
    b_ts = recorded[turn_key(1, "B", "opening", 0)].message_id
    assert peer.message(CHANNEL, b_ts).markdown == _slack_turn(spec, b, B_TEXT)
    # the restarted turn was streamed again from its start, into the same message
    shown_b = [c.markdown for c in peer.of("chat.update") if c.params.get("ts") == b_ts]
    assert not [text for text in shown_b if B_DROPPED in text and "Rebuttal" in text]
    assert peer.message(CHANNEL, recorded[notice_key("info", NOTICE, 0)].message_id).text.endswith(NOTICE)
    verdict = peer.message(CHANNEL, recorded[VERDICT].message_id)
    assert "Put the cache at the edge." in json.dumps(verdict.blocks) and "80" in json.dumps(verdict.blocks)
    assert "completed" in json.dumps(peer.message(CHANNEL, root_ts).blocks)
