"""Slack's limits as the peer enforces them: 429s retried with no text lost, many debates in one channel."""

from __future__ import annotations

import asyncio
import time
from itertools import pairwise
from pathlib import Path

from bots.slack.blocks import turn_header
from bots.slack.pacing import Pacer, PacingLimits
from bots.text import neutralize_slack
from orchestrator.events import TurnStarted
from orchestrator.store import Store
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import Limits, SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge

FAST = PacingLimits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05)


async def shown_turns_match_the_log(store: Store, peer: SlackAPIPeer, debate_id: str) -> int:
    """Every logged turn's message(s) show exactly its text under its header; returns how many turns."""
    record = await store.get_debate(debate_id)
    assert record is not None and record.channel is not None
    for turn in record.turns:
        ts = await store.get_message(debate_id, f"turn:{turn.round}:{turn.seat}:{turn.kind}")
        assert ts is not None, turn
        header = turn_header(TurnStarted(debate_id=debate_id, round=turn.round, seat=turn.seat, role=turn.role,
                                         kind=turn.kind, model=turn.model))
        assert peer.message(record.channel, ts).text == f"{header}\n{neutralize_slack(turn.text)}"
    return len(record.turns)


async def test_429s_are_waited_out_and_no_text_is_lost(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        llm.default = Reply(text="Evidence first: <!here> the p99 fell from 80 ms to 12 ms. " * 6, tokens_per_s=60)
        peer.rate_limit("chat.update", times=2, retry_after=0)
        peer.rate_limit("chat.postMessage", times=1, retry_after=0)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings, FAST) as bot:
            await bot.command("Cache at the edge? --rounds 1", peer)
            await bot.settle()
            (summary,) = await bot.core.store.history(1)
            assert summary.status == "completed"
            assert await shown_turns_match_the_log(bot.core.store, peer, summary.id) == 2
    limited = [c for c in peer.calls if c.status == 429]
    assert [c.method for c in limited].count("chat.update") == 2
    assert [c.method for c in limited].count("chat.postMessage") == 1


async def test_twenty_debates_in_one_channel_stay_within_slacks_limits(tmp_path: Path) -> None:
    # Slack's limits, 30 times faster: 1 post per 0.033 s per channel, 50 chat.update per 2 s per workspace
    slack_limits = Limits(post_interval=1 / 30, updates=50, window=2.0, retry_after=0)
    ours = PacingLimits(post_interval=0.04, updates=45, window=2.0, edit_interval=0.1, active_horizon=0.5)
    async with SlackAPIPeer(slack_limits) as peer, FakeLLMServer() as llm:
        script_judge(llm)
        llm.default = Reply(text="Point, counterpoint, evidence. " * 12, tokens_per_s=120)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings, ours) as bot:
            started = time.monotonic()
            await asyncio.gather(*(bot.command(f"Question {i}: tabs or spaces? --rounds 1", peer, channel="C1")
                                   for i in range(20)))
            await bot.settle()
            elapsed = time.monotonic() - started
            summaries = await bot.core.store.history(50)
            assert len(summaries) == 20 and {s.status for s in summaries} == {"completed"}
            for summary in summaries:
                assert await shown_turns_match_the_log(bot.core.store, peer, summary.id) == 2
    assert not [c for c in peer.calls if c.status == 429], "the pacer should keep every call under the limits"
    posts, updates = len(peer.of("chat.postMessage")), len(peer.of("chat.update"))
    print(f"\n20 debates: {posts} posts, {updates} updates, {elapsed:.1f} s (limits scaled 30x)")


async def test_pacer_spaces_posts_per_channel_and_shares_the_update_budget() -> None:
    pacer = Pacer(PacingLimits(post_interval=0.05, updates=4, window=0.2, edit_interval=0.0, active_horizon=1.0))
    loop = asyncio.get_running_loop()
    times: dict[str, list[float]] = {"C1": [], "C2": []}

    async def post(channel: str) -> None:
        async with pacer.posting(channel):
            times[channel].append(loop.time())

    await asyncio.gather(*(post(c) for c in ("C1", "C2") for _ in range(3)))
    for channel_times in times.values():
        ordered = sorted(channel_times)
        assert all(b - a >= 0.045 for a, b in pairwise(ordered))
    assert abs(times["C1"][0] - times["C2"][0]) < 0.04, "channels do not wait for each other"

    start = loop.time()
    for i in range(8):  # 4 from the full bucket, then 4 more at 20 per second
        await pacer.before_update(f"m{i}")
    assert loop.time() - start >= 0.18
    assert pacer.streaming() == 8
    assert pacer.min_edit_interval() == 8 * 0.2 / 4  # each streaming message gets its share
