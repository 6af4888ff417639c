"""Rendering a debate's events is idempotent, on the real Slack and Discord peers with a real SQLite log.

The stream a front reads is written at least once and replayed from its start after a front restarts.
These tests feed a `ThreadSink` such streams: every event twice and the whole debate again, a turn whose
model call ran twice (a new attempt: its text starts over), and a front that stops mid-debate and is
replaced by a sink opened with `resume`, which replays everything. Every turn, notice and verdict must
appear exactly once in the thread, in the message recorded for it, showing its final text.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import discord
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bots.discord.surface import DiscordThread, discord_limits
from bots.settings import load_settings
from bots.slack.surface import SlackThread
from bots.thread import ROOT, VERDICT, Pacer, ThreadSink, turn_key
from bots.thread.keys import notice_key
from bots.thread.tail import FrontTailer
from orchestrator.app import Core
from orchestrator.events import (
    DebateFinished,
    EventBase,
    TextDelta,
)
from orchestrator.log import DebateRecord, Store
from orchestrator.models import Outcome
from tests.discord_harness import connected
from tests.fakes.discord_api import CHANNEL_ID, TOKEN, DiscordPeer
from tests.fakes.slack_api import SlackAPIPeer
from tests.log_backends import LogBackend
from tests.thread_resume_harness import (
    A_TEXT,
    B_DROPPED,
    B_TEXT,
    CHANNEL,
    FAST_SLACK,
    NOTICE,
    _feed,
    _slack_root,
    assert_slack_thread_once,
    at_least_once,
    debate_events,
    spec_for,
)

# -- Slack ---------------------------------------------------------------------------------------------


async def test_slack_a_debate_delivered_twice_shows_each_message_once(tmp_path: Path) -> None:
    spec = spec_for("slack")
    async with SlackAPIPeer() as peer, Store(tmp_path / "log.db") as store:
        await store.create_debate(spec)
        client = AsyncWebClient(token="xoxb-test", base_url=peer.base_url)
        root_ts = await _slack_root(client, spec)
        sink = await ThreadSink.open(SlackThread(client, CHANNEL, root_ts), Pacer(FAST_SLACK), store, spec, root_ts)
        await _feed(sink, at_least_once(debate_events(spec)))
        await asyncio.wait_for(sink.wait_closed(), 20)
        await assert_slack_thread_once(peer, store, spec, root_ts)


async def test_slack_a_front_restarted_mid_debate_finishes_the_thread_without_a_duplicate(tmp_path: Path) -> None:
    spec = spec_for("slack")
    events = debate_events(spec)
    b_turn = turn_key(1, "B", "opening", 0)
    cut = next(i for i, e in enumerate(events) if isinstance(e, TextDelta) and e.attempt == "b2")
    async with SlackAPIPeer() as peer, Store(tmp_path / "log.db") as store:
        await store.create_debate(spec)
        client = AsyncWebClient(token="xoxb-test", base_url=peer.base_url)
        root_ts = await _slack_root(client, spec)
        first = await ThreadSink.open(SlackThread(client, CHANNEL, root_ts), Pacer(FAST_SLACK), store, spec, root_ts)
        await _feed(first, events[:cut])  # A is done; B's first attempt is streaming when the front goes down
        await peer.wait_for(lambda p: len(p.thread(CHANNEL, root_ts)) == 3)  # the notice, A's turn, B's turn
        await first.aclose()  # a post that was answered is recorded even so
        assert not (await store.messages(spec.id))[b_turn].final

        # a new front, with a new client and pacer: what exists comes from the log; the stream from offset 0
        again = AsyncWebClient(token="xoxb-test", base_url=peer.base_url)
        second = await ThreadSink.resume(SlackThread(again, CHANNEL, root_ts), Pacer(FAST_SLACK), store, spec)
        await _feed(second, at_least_once(events))
        await asyncio.wait_for(second.wait_closed(), 20)
        await assert_slack_thread_once(peer, store, spec, root_ts)


class _Replay:
    """A feed that replays a recorded stream from the start (the at-least-once stream as a front reads it)."""

    def __init__(self, events: list[EventBase]) -> None:
        self.stream = events
        self.reads = 0

    async def events(self, debate_id: str, offset: int = 0) -> AsyncIterator[EventBase]:
        self.reads += 1
        for event in self.stream[offset:]:
            yield event

    async def cancel(self, debate_id: str) -> None:
        raise AssertionError("nothing is stopped here")


async def test_slack_a_restarted_front_resumes_its_live_debates_from_the_log(tmp_path: Path) -> None:
    spec, other = spec_for("slack"), spec_for("discord")
    events = debate_events(spec)
    async with SlackAPIPeer() as peer, Store(tmp_path / "log.db") as store:
        for s in (spec, other):
            await store.create_debate(s)
        client = AsyncWebClient(token="xoxb-test", base_url=peer.base_url)
        root_ts = await _slack_root(client, spec)
        first = await ThreadSink.open(SlackThread(client, CHANNEL, root_ts), Pacer(FAST_SLACK), store, spec, root_ts)
        await store.set_message(other.id, ROOT, "discord", CHANNEL, "d-root")
        await _feed(first, events[:5])  # up to A's first text
        await peer.wait_for(lambda p: len(p.thread(CHANNEL, root_ts)) == 2)  # the notice, A's turn
        await first.aclose()
        final = events[-1]
        assert isinstance(final, DebateFinished)
        await store.finish_debate(spec.id, final.outcome)  # the workers finished the debate while no front was up

        async def reach(record: DebateRecord) -> tuple[SlackThread, Pacer]:
            assert record.channel is not None and record.thread is None  # the root's ts comes from the log
            return SlackThread(client, record.channel, root_ts), Pacer(FAST_SLACK)

        feed = _Replay(at_least_once(events))
        tailer = FrontTailer(feed, store, "slack", reach)
        assert await tailer.resume() == [spec.id]  # the Discord debate is another front's
        await asyncio.wait_for(tailer.idle(), 20)
        await assert_slack_thread_once(peer, store, spec, root_ts)
        assert await store.threads_to_resume("slack", ROOT) == []  # ended, root final: nothing to resume
        assert await tailer.resume() == [] and feed.reads == 1


# -- Discord -------------------------------------------------------------------------------------------


def _discord_text(message: dict[str, Any]) -> str:
    parts = [message.get("content") or ""] + [e.get("description", "") for e in message.get("embeds", [])]
    return " ".join(" ".join(parts).split())


@pytest.mark.slow
async def test_discord_replays_and_a_restart_show_each_message_once(tmp_path: Path) -> None:
    spec = spec_for("discord")
    events = debate_events(spec)
    cut = next(i for i, e in enumerate(events) if isinstance(e, TextDelta) and e.attempt == "b2")
    async with DiscordPeer() as peer:
        settings = load_settings(DEBATE_DB=str(tmp_path / "log.db"), DISCORD_BOT_TOKEN=TOKEN,
                                 DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url)
        async with await Core.open(settings) as core, connected(core) as bot:
            store = core.store
            await store.create_debate(spec)
            channel = bot.get_channel(int(CHANNEL_ID))
            assert isinstance(channel, discord.TextChannel)
            root = await channel.send(content=f"Debate: {spec.topic}", allowed_mentions=discord.AllowedMentions.none())
            thread = await bot.output.open_thread(root, spec.topic)
            fast = discord_limits(writes=50, window=1.0, edit_interval=0.05)
            first = await ThreadSink.open(DiscordThread(thread, channel), Pacer(fast), store, spec, str(root.id))
            await _feed(first, at_least_once(events[:cut]))
            b_turn = turn_key(1, "B", "opening", 0)
            # the round marker, the notice, A's turn and B's: then the front goes down
            await peer.wait_for(lambda: len(peer.channel_messages(str(thread.id))) == 4)
            await first.aclose()

            second = await ThreadSink.resume(DiscordThread(thread, channel), Pacer(fast), store, spec)
            await _feed(second, at_least_once(events))
            await asyncio.wait_for(second.wait_closed(), 20)

            recorded = await store.messages(spec.id)
            assert all(m.final for m in recorded.values())
            in_thread = peer.channel_messages(str(thread.id))
            keys = {k for k in recorded if k != ROOT}
            assert keys == {"round:1", turn_key(1, "A", "opening", 0), b_turn, notice_key("info", NOTICE, 0),
                            VERDICT}
            assert sorted(m["id"] for m in in_thread) == sorted(recorded[k].message_id for k in keys)
            by_key = {k: peer.messages[recorded[k].message_id] for k in keys}
            assert " ".join(A_TEXT.split()) in _discord_text(by_key[turn_key(1, "A", "opening", 0)])
            b_shown = _discord_text(by_key[b_turn])
            assert " ".join(B_TEXT.split()) in b_shown and B_DROPPED.strip() not in b_shown
            assert NOTICE in _discord_text(by_key[notice_key("info", NOTICE, 0)])
            assert by_key[VERDICT]["components"]  # the vote buttons
            writes = [c for c in peer.calls if c.is_write and c.method == "POST"
                      and c.path == f"/channels/{thread.id}/messages"]
            assert len(writes) == len(keys)  # nothing was posted twice


# -- the log ------------------------------------------------------------------------------------------


async def test_the_log_keeps_final_messages_final_and_finds_the_threads_to_resume(log_backend: LogBackend) -> None:
    running, ended, shown, elsewhere = spec_for("slack"), spec_for("slack"), spec_for("slack"), spec_for("discord")
    async with log_backend.open() as store:
        for s in (running, ended, shown, elsewhere):
            await store.create_debate(s)
            await store.set_message(s.id, ROOT, s.platform, CHANNEL, f"{s.id}-root")
        for s in (ended, shown):
            await store.finish_debate(s.id, Outcome(status="completed"))
        await store.set_message(shown.id, ROOT, "slack", CHANNEL, f"{shown.id}-root", final=True)
        assert await store.threads_to_resume("slack", ROOT) == [running.id, ended.id]

        key = turn_key(1, "A", "opening", 0)
        await store.set_message(running.id, key, "slack", CHANNEL, "m1", final=True)
        await store.set_message(running.id, key, "slack", CHANNEL, "m1")  # a late or repeated write
        assert (await store.messages(running.id))[key].final
        await store.set_message(running.id, key, "slack", CHANNEL, "m2")  # another message under the key
        recorded = (await store.messages(running.id))[key]
        assert (recorded.message_id, recorded.final) == ("m2", False)
