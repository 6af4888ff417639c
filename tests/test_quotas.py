"""Quotas (issue 10, item 4): checked before anything is posted, atomically, across processes.

The log's `admit` on both backends, a real SQLite file and a real Postgres (two handles on one log stand
in for two fronts);
then Slack through bolt's real dispatch and Discord through the real discord.py client, with every
debate held open at its first model call (`Reply(gate=…)`) so it stays running while others ask.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bots.settings import load_settings
from bots.slack.surface import slack_limits
from orchestrator.app import Core
from orchestrator.log import DebateLog
from orchestrator.models import DebateSpec, Outcome, Seat
from orchestrator.quotas import HOUR_S, STALE_AFTER_S, Quota, QuotaExceeded
from tests.cli_harness import debate, two_providers
from tests.discord_harness import connected
from tests.fakes.discord_api import CHANNEL_ID, TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings, slash_body
from tests.llm_scripts import is_judge, script_judge
from tests.log_backends import LogBackend

LIMITS = slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05)
OPENING = "You open the debate as the proposer"
T0 = 1_750_000_000.0


def spec(user: str = "U1", channel: str = "C1", *, platform: str = "slack", workspace: str | None = "T1"
         ) -> DebateSpec:
    return DebateSpec(topic="Tabs or spaces?", seats=(Seat(label="A", role="proposer", model="openai:gpt-5"),
                                                      Seat(label="B", role="challenger", model="anthropic:claude")),
                      judge="openai:gpt-5", platform=platform, workspace=workspace, channel=channel,
                      requested_by=user)


def refusal(limit: str, raised: pytest.ExceptionInfo[QuotaExceeded]) -> QuotaExceeded:
    assert raised.value.limit == limit, raised.value
    return raised.value


# ---------------------------------------------------------------- the log's admit, on each backend


async def test_admit_holds_each_limit_and_reserves_the_row(log_backend: LogBackend) -> None:
    quota = Quota(max_running=4, max_running_per_user=2, max_running_per_channel=3, max_starts_per_user_hour=3)
    async with log_backend.open(runner="serve:a") as store:
        first, second = spec(), spec()
        await store.admit(first, quota, at=T0)
        await store.admit(second, quota, at=T0 + 1)
        await store.admit(second, quota, at=T0 + 2)  # a repeat is a no-op, not a third start
        row = await store.get_debate(first.id, turns=False)
        assert row is not None and (row.status, row.runner, row.requested_by) == ("running", "serve:a", "U1")

        with pytest.raises(QuotaExceeded) as raised:
            await store.admit(spec(), quota, at=T0 + 3)
        assert refusal("user", raised).running == (first.id, second.id)
        assert "DEBATE_MAX_RUNNING_PER_USER" in str(raised.value) and first.id in str(raised.value)

        # the same user elsewhere (another workspace) and another user here are not held by U1's debates
        await store.admit(spec(workspace="T2"), quota, at=T0 + 4)
        await store.admit(spec("U2"), quota, at=T0 + 5)
        with pytest.raises(QuotaExceeded) as raised:  # C1 now runs 3
            await store.admit(spec("U3"), quota, at=T0 + 6)
        assert "DEBATE_MAX_RUNNING_PER_CHANNEL" in str(refusal("channel", raised))
        with pytest.raises(QuotaExceeded) as raised:  # 4 running in all
            await store.admit(spec("U3", "C2"), quota, at=T0 + 7)
        assert "4 debates are already running" in str(refusal("global", raised))

        # a finished debate frees its running slots, but still counts as one of U1's starts this hour
        await store.finish_debate(first.id, Outcome(status="completed"), at=T0 + 8)
        third = spec()
        await store.admit(third, quota, at=T0 + 9)
        await store.finish_debate(third.id, Outcome(status="completed"), at=T0 + 10)
        with pytest.raises(QuotaExceeded) as raised:
            await store.admit(spec(), quota, at=T0 + 11)
        hourly = refusal("hourly", raised)
        assert hourly.frees_at == T0 + HOUR_S  # when the oldest of the 3 starts leaves the window
        clock = datetime.fromtimestamp(T0 + HOUR_S, UTC).strftime("%H:%M")
        assert f"You can start another at {clock} UTC (in 60 minutes)." in str(hourly)
        await store.admit(spec(), quota, at=T0 + HOUR_S + 1)

        # a running row no process will ever finish (its host died, never restarted) holds no slot forever
        late = T0 + HOUR_S + STALE_AFTER_S + 100
        await store.admit(spec("U9", "C9"), Quota(max_running=1), at=late)
        with pytest.raises(QuotaExceeded) as raised:  # …while one admitted now does
            await store.admit(spec("U9", "C9"), Quota(max_running=1), at=late + 1)
        assert "1 debate is already running" in str(refusal("global", raised))


async def test_an_admitted_debate_is_completed_by_its_start_or_gives_its_slot_back(log_backend: LogBackend) -> None:
    quota = Quota(max_running=1)
    async with log_backend.open(runner="serve:a") as store:
        admitted = spec()
        await store.admit(admitted, quota, at=T0)
        started = admitted.model_copy(update={"thread": "1700000001.000001"})
        await store.create_debate(started, at=T0 + 5)  # the sink's DebateStarted, after the root post
        row = await store.get_debate(admitted.id)
        assert row is not None and row.spec is not None
        assert (row.thread, row.spec.thread, row.created_at, row.runner) == (started.thread, started.thread, T0,
                                                                             "serve:a")
        assert [s.label for s in row.seats] == ["A", "B"]

        await store.finish_debate(admitted.id, Outcome(status="failed", error="the root post failed"))
        await store.admit(spec("U2"), quota, at=T0 + 6)  # the slot is free again
        failed = await store.get_debate(admitted.id, turns=False)
        assert failed is not None and (failed.status, failed.error) == ("failed", "the root post failed")


async def test_concurrent_admits_from_two_processes_never_pass_a_limit(log_backend: LogBackend) -> None:
    """Two handles on one log, each with its own connections, as two fronts would have."""
    quota = Quota(max_running=7, max_running_per_user=3)
    async with log_backend.open(runner="serve:a") as a, log_backend.open(runner="serve:b") as b:

        async def attempt(store: DebateLog, user: str) -> str | None:
            try:
                await store.admit(spec(user, f"C-{user}"), quota)
            except QuotaExceeded as exc:
                return exc.limit
            return None

        requests = [attempt(store, user) for _ in range(10) for store in (a, b) for user in ("U1", "U2", "U3")]
        results = await asyncio.gather(*requests)
        assert results.count(None) == 7
        history = await a.history(100)
        assert len(history) == 7 and all(d.status == "running" for d in history)
        per_user = {u: sum(d.requested_by == u for d in history) for u in ("U1", "U2", "U3")}
        assert all(n <= 3 for n in per_user.values()), per_user
        assert {d.runner for d in history} <= {"serve:a", "serve:b"}


@pytest.mark.slow
async def test_the_cli_is_held_to_the_global_cap_only(tmp_path: Path, log_backend: LogBackend) -> None:
    """`debate run` in a real subprocess, sharing the log with a serving front whose chat debates run."""
    async with FakeLLMServer() as srv:
        script_judge(srv)
        env = two_providers(tmp_path, srv) | {"DEBATE_MAX_RUNNING_PER_USER": "1", "DEBATE_MAX_CONCURRENT": "2"}
        env |= log_backend.env
        async with log_backend.open(runner="serve:elsewhere") as front:
            await front.admit(spec("U1"), Quota(max_running=2))
            code, out, err = await debate(tmp_path, "run", "Tabs or spaces?", "--rounds", "1", env=env)
            assert code == 0, err  # one running elsewhere: room under the cap of 2; no chat quota applies
            await front.admit(spec("U2"), Quota(max_running=3))
            code, out, err = await debate(tmp_path, "run", "Tabs or spaces?", "--rounds", "1", env=env)
        assert code == 1 and "2 debates are already running" in err and "DEBATE_MAX_CONCURRENT" in err, err
        assert not out
        assert sum(not is_judge(r) for r in srv.requests) == 2  # the refused run called no model


# ---------------------------------------------------------------- Slack, through bolt's dispatch


@pytest.fixture
async def slack_peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as peer:
        yield peer


def _held(llm: FakeLLMServer) -> asyncio.Event:
    """Every debate waits at its opening call until the returned gate opens; the judge answers."""
    gate = asyncio.Event()
    script_judge(llm)
    llm.add_rule(Reply(gate=gate), match=OPENING)
    return gate


def _slack(tmp_path: Path, peer: SlackAPIPeer, llm: FakeLLMServer, **limits: Any) -> SlackBot:
    return SlackBot(slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                   **limits), LIMITS)


def _roots(peer: SlackAPIPeer) -> list[Any]:
    return [c for c in peer.of("chat.postMessage") if "thread_ts" not in c.params]


def _private(peer: SlackAPIPeer) -> list[str]:
    return [c.params.get("text", "") for c in peer.of("response_url") if c.params.get("response_type") == "ephemeral"]


async def _burst(bot: SlackBot, peer: SlackAPIPeer, n: int, *, user: str, channel: str = "C1") -> None:
    await asyncio.gather(*(bot.post(slash_body(f"Tabs or spaces, take {i}?", user=user, channel=channel,
                                               trigger=f"{user}-{channel}-{i}", response_url=peer.response_url()))
                           for i in range(n)))


@pytest.mark.slow
async def test_a_burst_from_one_user_posts_only_their_running_quota(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    gate = _held(llm_server)
    async with _slack(tmp_path, slack_peer, llm_server, DEBATE_MAX_RUNNING_PER_USER=2,
                      DEBATE_MAX_RUNNING_PER_CHANNEL=5, DEBATE_MAX_CONCURRENT=5) as bot:
        await _burst(bot, slack_peer, 10, user="U1")
        await slack_peer.wait_for(lambda p: len(_private(p)) >= 8)
        await llm_server.wait_for_requests(2)  # both admitted debates are running, held at their opening
        assert len(_roots(slack_peer)) == 2
        refusals = _private(slack_peer)
        assert len(refusals) == 8 and all("DEBATE_MAX_RUNNING_PER_USER" in r for r in refusals), refusals
        assert all("as soon as one finishes" in r for r in refusals)

        await bot.command("Monorepo or polyrepo?", slack_peer, user="U2", trigger="U2-1")
        await slack_peer.wait_for(lambda p: len(_roots(p)) == 3)
        assert len(_private(slack_peer)) == 8  # the second user was not refused

        gate.set()
        await bot.settle()
        history = await bot.core.store.history(20)
        assert sorted(d.requested_by or "" for d in history) == ["U1", "U1", "U2"]
        assert all(d.status == "completed" for d in history)
        assert not [c for c in slack_peer.of("chat.update") if "failed" in json.dumps(c.params).lower()]


@pytest.mark.slow
async def test_the_channel_and_global_limits_refuse_privately(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    gate = _held(llm_server)
    async with _slack(tmp_path, slack_peer, llm_server, DEBATE_MAX_RUNNING_PER_CHANNEL=2,
                      DEBATE_MAX_CONCURRENT=3) as bot:
        for user in ("U1", "U2", "U3"):
            await bot.command("Tabs or spaces?", slack_peer, user=user, channel="C1", trigger=f"c1-{user}")
        await slack_peer.wait_for(lambda p: len(_roots(p)) == 2 and len(_private(p)) == 1)
        assert "This channel already has 2 debates running" in _private(slack_peer)[0]
        assert "DEBATE_MAX_RUNNING_PER_CHANNEL" in _private(slack_peer)[0]

        await bot.command("Tabs or spaces?", slack_peer, user="U3", channel="C2", trigger="c2-U3")
        await slack_peer.wait_for(lambda p: len(_roots(p)) == 3)
        await bot.command("Tabs or spaces?", slack_peer, user="U4", channel="C3", trigger="c3-U4")
        await slack_peer.wait_for(lambda p: len(_private(p)) == 2)
        assert "3 debates are already running" in _private(slack_peer)[1]
        assert "DEBATE_MAX_CONCURRENT" in _private(slack_peer)[1]
        assert len(_roots(slack_peer)) == 3

        gate.set()
        await bot.settle()


@pytest.mark.slow
async def test_starts_per_hour_say_when_the_next_one_may_start(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    script_judge(llm_server)
    async with _slack(tmp_path, slack_peer, llm_server, DEBATE_MAX_STARTS_PER_USER_HOUR=2) as bot:
        for i in range(2):
            await bot.command(f"Tabs or spaces, take {i}?", slack_peer, trigger=f"hour-{i}")
            await bot.settle()
        history = await bot.core.store.history(5)
        assert [d.status for d in history] == ["completed", "completed"]  # none running: the hour is the limit

        await bot.command("Tabs or spaces, once more?", slack_peer, trigger="hour-2")
        await bot.settle()
        assert len(_roots(slack_peer)) == 2
        (text,) = _private(slack_peer)
        frees = datetime.fromtimestamp(min(d.created_at for d in history) + HOUR_S, UTC).strftime("%H:%M")
        assert "You have started 2 debates in the past hour" in text and "DEBATE_MAX_STARTS_PER_USER_HOUR" in text
        assert re.search(rf"You can start another at {frees} UTC \(in \d+ minutes\)\.", text), text
        assert len(await bot.core.store.history(5)) == 2


# ---------------------------------------------------------------- Discord, through discord.py


@pytest.mark.slow
async def test_two_simultaneous_discord_starts_at_the_cap_make_one_thread(tmp_path: Path, llm_server: FakeLLMServer
                                                                          ) -> None:
    gate = _held(llm_server)
    async with DiscordPeer() as peer:
        settings = load_settings(
            DEBATE_DB=str(tmp_path / "debates.db"), DEBATE_MAX_RETRIES=0, DEBATE_MAX_CONCURRENT=1,
            OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
            ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
            DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
        )
        async with await Core.open(settings) as core, connected(core):
            first, second = [
                await peer.dispatch_interaction(peer.slash_command("debate", {"topic": f"Tabs or spaces {n}?"},
                                                                   user_id=user))
                for n, user in ((1, "740000000000000101"), (2, "740000000000000102"))
            ]
            await peer.wait_for(lambda: first.original is not None and second.original is not None)
            await llm_server.wait_for_requests(1)
            answers = [peer.messages[r.original] for r in (first, second) if r.original is not None]
            public = [m for m in answers if not m.get("flags", 0) & 64]
            private = [m for m in answers if m.get("flags", 0) & 64]
            assert len(public) == 1 and len(private) == 1, answers
            assert "DEBATE_MAX_CONCURRENT" in private[0]["content"]
            assert [t["id"] for t in peer.threads()] == [public[0]["id"]]
            roots = [m for m in peer.channel_messages(CHANNEL_ID) if m["embeds"]]
            assert [m["id"] for m in roots] == [public[0]["id"]]  # no orphan root left at "Starting…"

            gate.set()
            await peer.wait_for(lambda: "Finished" in json.dumps(peer.messages[public[0]["id"]]["embeds"]), 30)
            (only,) = await core.store.history(5)
            assert only.status == "completed"
