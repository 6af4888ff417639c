"""Slack's native streams for a turn as it is written (chat.startStream / appendStream / stopStream),
paced by the same model as posts and updates, and the fallback to posts and updates when Slack refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from bots.slack.surface import slack_limits
from bots.thread import Pacer, Pacers
from bots.thread.pacing import StreamLimits
from bots.thread.streams import settled
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import Limits, SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge
from tests.slack_pacing_harness import shown_turns_match_the_log

TURN = "Evidence first: **the p99 fell** from 80 ms to 12 ms, see [the run](https://x.example). " * 8
STREAMING = slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05, streams=True)


@pytest.mark.slow
async def test_turns_stream_natively_and_end_showing_their_text(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        llm.default = Reply(text=TURN, tokens_per_s=300)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings, STREAMING) as bot:
            await bot.command("Cache at the edge? --rounds 1", peer, channel="C3", user="U7", team="T1")
            await bot.settle()
            (summary,) = await bot.core.store.history(1)
            assert summary.status == "completed"
            assert await shown_turns_match_the_log(bot.core.store, peer, summary.id) == 2
            record = await bot.core.store.get_debate(summary.id)
            assert record is not None

    starts = [c for c in peer.of("chat.startStream") if c.ok]
    assert len(starts) == 2, "one stream per turn"
    for start in starts:
        assert (start.params["recipient_user_id"], start.params["recipient_team_id"]) == ("U7", "T1")
        assert start.params["thread_ts"] == record.thread
    streamed = {m.ts for m in peer.messages.values() if m.channel == "C3" and m.thread_ts and m.appends}
    assert len(streamed) == 2, "text arrives by appends"
    assert {c.params["ts"] for c in peer.of("chat.stopStream") if c.ok} == streamed, "every stream is stopped"
    assert not [c for c in peer.of("chat.update") if c.params["ts"] in streamed and c.ok], \
        "a stream that only grew needs no update"
    assert not [c for c in peer.calls if not c.ok], [(c.method, c.error) for c in peer.calls if not c.ok]
    for ts in streamed:
        shown = peer.message("C3", ts).markdown
        assert "x.example" not in shown and "the run" in shown and "**the p99 fell**" in shown


@pytest.mark.slow
async def test_a_refused_stream_falls_back_to_posts_and_updates_for_the_workspace(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        llm.default = Reply(text=TURN, tokens_per_s=300)
        peer.refuse_streams("feature_not_enabled")
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings, STREAMING) as bot:
            for topic in ("Cache at the edge? --rounds 1", "Tabs or spaces? --rounds 1"):
                await bot.command(topic, peer, channel="C3")
                await bot.settle()
            summaries = await bot.core.store.history(5)
            assert [s.status for s in summaries] == ["completed", "completed"]
            for summary in summaries:
                assert await shown_turns_match_the_log(bot.core.store, peer, summary.id) == 2
            assert bot.runtime.pacers.for_workspace("T1").streams_refused == "feature_not_enabled"
    assert len(peer.of("chat.startStream")) == 1, "the first refusal is remembered for the workspace"
    assert not peer.of("chat.appendStream") and not peer.of("chat.stopStream")
    turn_posts = [c for c in peer.of("chat.postMessage") if "thread_ts" in c.params
                  and c.markdown.startswith(("**A · proposer**", "**B · challenger**"))]
    assert len(turn_posts) == 4, "every turn posted instead"
    assert [c for c in peer.of("chat.update") if "thread_ts" not in c.params and "Evidence" in c.markdown]


@pytest.mark.slow
async def test_a_stream_is_stopped_before_slack_closes_it_and_its_message_goes_on_by_updates(tmp_path: Path) -> None:
    limits = slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05,
                          streams=StreamLimits(calls=18, window=1.0, appends=90, max_age=0.3))
    # the stop is due at 0.3 s and Slack closes a stream at 1.2 s: a margin a loaded machine (the suite runs a
    # test file per core) still keeps
    async with SlackAPIPeer(Limits(stream_ttl=1.2)) as peer, FakeLLMServer() as llm:
        script_judge(llm)
        llm.default = Reply(text=TURN, tokens_per_s=80)  # about 3 s of text: past both ages
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings, limits) as bot:
            await bot.command("Cache at the edge? --rounds 1", peer, channel="C3")
            await bot.settle()
            (summary,) = await bot.core.store.history(1)
            assert await shown_turns_match_the_log(bot.core.store, peer, summary.id) == 2
    assert not [c for c in peer.calls if c.error == "message_not_in_streaming_state"]
    stopped = {c.params["ts"] for c in peer.of("chat.stopStream") if c.ok}
    updated = {c.params["ts"] for c in peer.of("chat.update") if c.ok}
    assert len(stopped) == 2 and stopped <= updated, "each turn's stream stopped young, then updated"


async def test_the_start_budget_is_per_workspace_and_holds_a_stop_for_every_start() -> None:
    pacers = Pacers(slack_limits(streams=StreamLimits(calls=5, window=60.0)))
    team = pacers.for_workspace("T1")
    assert [team.start_stream() for _ in range(3)] == [True, True, False], "a start and its stop: 2 of 5 each"
    assert pacers.for_workspace("T2").start_stream(), "another workspace has its own budget"
    team.refuse_streams("not_allowed")
    assert not Pacer(team.limits).streams_refused and team.streams_refused == "not_allowed"


def test_a_stream_takes_only_text_that_will_not_change() -> None:
    assert settled("the p99 fell fr") == "the p99 fell "
    assert settled("see [the run](https://x.exa") == "see "
    assert settled("see [the run") == "see "
    assert settled("as in [1], the cache hit rate ro") == "as in [1], the cache hit rate "
