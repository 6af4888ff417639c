"""A stances round played again (nobody answered readably) is a new take of each turn: its events and its
thread messages have keys of their own, so a front that drops repeats by key still shows the rerun,
while the log keeps the latest take under (round, seat, kind)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.surface import SlackThread
from bots.thread import Pacer, ThreadSink, turn_key
from orchestrator.durable.feed import Seen
from orchestrator.events import EventBase, TurnCompleted, TurnStarted
from orchestrator.log import Store
from tests.debate_harness import make_spec, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer
from tests.format_stances_harness import (
    JUDGE,
    MODELS,
    SECRET_GARBAGE,
    STANCES,
    TOPIC,
    envelope,
    script_judge,
    script_split,
)
from tests.thread_resume_harness import CHANNEL, FAST_SLACK

READABLE = "late but readable"


def script_rerun(srv: FakeLLMServer) -> None:
    """Round 1: both debaters unreadable twice (answer and reminder), readable when the round runs again."""
    script_split(srv, STANCES[:2])
    script_judge(srv, "A")
    srv.add_rule(Reply(text=SECRET_GARBAGE), lambda r: "Round 1 of up to 3" in r.last_user, times=4)
    srv.add_rule(Reply(text=envelope("claim", READABLE)), lambda r: "Round 1 of up to 3" in r.last_user)
    srv.add_rule(Reply(text=envelope("claim", "nothing new", done=True)), lambda r: "Round 2 of up to 3" in r.last_user)


async def test_a_rerun_rounds_turns_keep_their_own_keys_through_a_front_that_drops_repeats(
    llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    script_rerun(llm_server)
    spec = make_spec("stances", MODELS[:2], judge=JUDGE, topic=TOPIC)
    result = await run_debate(llm_server, spec)
    assert result.outcome.status == "completed"

    # the stream as a front reads it: each event once by key; the rerun's turns are new turns
    seen = Seen()
    read: list[EventBase] = [e for e in result.events if seen.first(e)]
    round_one = [e for e in read if isinstance(e, TurnCompleted) and e.turn.round == 1]
    assert sorted((e.turn.seat, e.take, e.turn.status) for e in round_one) == [
        ("A", 0, "empty"), ("A", 1, "ok"), ("B", 0, "empty"), ("B", 1, "ok")]
    assert {e.key for e in round_one} >= {"turn:1:A:opening:t1:end", "turn:1:B:opening:t1:end"}
    assert len({e.key for e in read if isinstance(e, TurnStarted)}) == len(result.of(TurnStarted))
    # the log: one turn per (round, seat, kind), the latest take
    assert [(t.round, t.seat, t.status) for t in result.turns if t.round == 1].count((1, "A", "ok")) == 1

    # the thread: the first take and the rerun each in messages of their own, the rerun showing its text
    async with SlackAPIPeer() as peer, Store(tmp_path / "log.db") as store:
        await store.create_debate(spec)
        client = AsyncWebClient(token="xoxb-test", base_url=peer.base_url)
        root_ts = str((await client.chat_postMessage(channel=CHANNEL, text="root"))["ts"])
        sink = await ThreadSink.open(SlackThread(client, CHANNEL, root_ts), Pacer(FAST_SLACK), store, spec, root_ts)
        for event in read:
            await sink.handle(event)
        await asyncio.wait_for(sink.wait_closed(), 20)
        recorded = await store.messages(spec.id)
        for seat in "AB":
            first, rerun = turn_key(1, seat, "opening", 0), turn_key(1, seat, "opening", 0, take=1)
            assert rerun == f"turn:1:{seat}:opening:t1:0"
            assert recorded[first].message_id != recorded[rerun].message_id
            assert recorded[rerun].final
            assert READABLE in peer.message(CHANNEL, recorded[rerun].message_id).text
            assert READABLE not in json.dumps(peer.message(CHANNEL, recorded[first].message_id).text)
