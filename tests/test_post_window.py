"""The window between a post and the record of its id (issue 18, item 15), on the real Slack peer and a real
SQLite log: the peer carries out a turn's chat.postMessage and then drops the connection instead of
answering, as when the process dies (kill -9) or the network fails right then. The message exists in the
thread but its ts was never recorded; whoever renders the thread next (the same sink retrying, or a sink
resumed by a restarted front) must find that message and edit it, not post the turn a second time."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bots.settings import load_settings
from bots.slack.app import web_client
from bots.slack.surface import SlackThread
from bots.thread import ROOT, ThreadSink, turn_key
from bots.thread.pacing import Pacer
from orchestrator.events import TextDelta
from orchestrator.log import Store
from orchestrator.models import DebateSpec
from tests.fakes.slack_api import SlackAPIPeer
from tests.thread_resume_harness import (
    A_TEXT,
    CHANNEL,
    FAST_SLACK,
    _feed,
    _slack_root,
    _slack_turn,
    at_least_once,
    debate_events,
    spec_for,
)


def client_for(peer: SlackAPIPeer) -> Any:
    """The product's own client (its retry handlers included), pointed at the peer."""
    settings = load_settings(_env_file=None, SLACK_BOT_TOKEN="xoxb-test", SLACK_API_BASE_URL=peer.base_url)
    return web_client(settings, "xoxb-test")


async def assert_each_message_once(peer: SlackAPIPeer, store: Store, spec: DebateSpec, root_ts: str) -> None:
    """The notice, both turns and the verdict in the thread once each, every one recorded final under its
    key; A's turn (the post whose answer was lost) is the message the peer kept, showing its final text."""
    recorded = await store.messages(spec.id)
    thread = peer.thread(CHANNEL, root_ts)
    assert len(thread) == 4, [m.text for m in thread]
    assert {m.ts for m in thread} == {m.message_id for k, m in recorded.items() if k != ROOT}
    assert all(m.final for m in recorded.values()), [m for m in recorded.values() if not m.final]
    a_turn = recorded[turn_key(1, "A", "opening", 0)].message_id
    assert [m.ts for m in peer.lost] == [a_turn]
    assert peer.message(CHANNEL, a_turn).markdown == _slack_turn(spec, spec.seats[0], A_TEXT)
    assert not [m.markdown for m in thread if m.markdown.rstrip().endswith("▍") or m.text.rstrip().endswith("▍")]


def a_turn_post(params: dict[str, Any]) -> bool:
    return bool(params.get("thread_ts")) and "A · proposer" in str(params.get("text"))


async def test_a_post_whose_answer_was_lost_is_found_again_not_posted_twice(tmp_path: Path) -> None:
    spec = spec_for("slack")
    async with SlackAPIPeer() as peer, Store(tmp_path / "log.db") as store:
        await store.create_debate(spec)
        client = client_for(peer)
        root_ts = await _slack_root(client, spec)
        peer.lose_answer(a_turn_post)
        sink = await ThreadSink.open(SlackThread(client, CHANNEL, root_ts), Pacer(FAST_SLACK), store, spec, root_ts)
        await _feed(sink, debate_events(spec))
        await asyncio.wait_for(sink.wait_closed(), 20)
        await assert_each_message_once(peer, store, spec, root_ts)


async def test_a_front_that_died_right_after_a_post_resumes_without_posting_it_again(tmp_path: Path) -> None:
    spec = spec_for("slack")
    events = debate_events(spec)
    cut = next(i for i, e in enumerate(events) if isinstance(e, TextDelta) and e.seat == "B")
    async with SlackAPIPeer() as peer, Store(tmp_path / "log.db") as store:
        await store.create_debate(spec)
        client = client_for(peer)
        root_ts = await _slack_root(client, spec)
        peer.lose_answer(a_turn_post)
        first = await ThreadSink.open(SlackThread(client, CHANNEL, root_ts), Pacer(FAST_SLACK), store, spec, root_ts)
        await _feed(first, events[:cut])
        await peer.wait_for(lambda p: p.lost)  # A's turn is in the thread; its ts never came back
        await first.aclose()  # the front is gone before it could post again

        again = client_for(peer)
        second = await ThreadSink.resume(SlackThread(again, CHANNEL, root_ts), Pacer(FAST_SLACK), store, spec)
        await _feed(second, at_least_once(events))
        await asyncio.wait_for(second.wait_closed(), 20)
        await assert_each_message_once(peer, store, spec, root_ts)
