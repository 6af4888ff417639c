"""Two Slack fronts sharing one log and one workflow database (as behind a load balancer), a worker beside
them: each workspace's threads are rendered by exactly one front, whichever front took the command;
a front that dies has its workspaces taken over once its leases run out, one that stops gracefully
hands them over at once; no message is posted twice.

Each front has a bot token of its own, so the Slack peer tells which front wrote each call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from orchestrator.app import Core
from orchestrator.log import DebateLog
from tests.durable_serve_harness import OPENING, assert_each_message_once
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.front_leases_harness import until
from tests.llm_scripts import script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

TOKENS = {"a": "xoxb-front-a", "b": "xoxb-front-b"}
CHANNELS = {"T1": "C1", "T2": "C2"}  # one channel in each workspace
QUICK = (3.0, 0.1)  # lease, sweep: a dead front's workspaces are free within seconds


def settings(tmp_path: Path, peer: SlackAPIPeer, llm: FakeLLMServer, token: str) -> Any:
    return slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                          SLACK_BOT_TOKEN=token, DEBATE_ROUNDS=1, DEBATE_MAX_RUNNING_PER_USER=10,
                          DEBATE_MAX_RUNNING_PER_CHANNEL=10)


@asynccontextmanager
async def worker(tmp_path: Path, peer: SlackAPIPeer, llm: FakeLLMServer) -> AsyncIterator[Core]:
    """`debate worker --name w1` in this process (the fronts only enqueue and render)."""
    async with await Core.open(settings(tmp_path, peer, llm, TOKENS["a"]), role="worker", name="w1") as core:
        yield core


def front(tmp_path: Path, peer: SlackAPIPeer, llm: FakeLLMServer, name: str,
          lease: tuple[float, float] | None = None) -> SlackBot:
    return SlackBot(settings(tmp_path, peer, llm, TOKENS[name]), role="front", name=name, lease=lease)


async def start(bot: SlackBot, peer: SlackAPIPeer, topic: str, team: str) -> None:
    status, _ = await bot.command(f"{topic} --rounds 1", peer, team=team, channel=CHANNELS[team])
    assert status == 200


async def debate_ids(store: DebateLog, count: int) -> dict[str, str]:
    """topic → id, once `count` debates have their thread in the log."""
    async def threaded() -> bool:
        records = [await store.get_debate(s.id, turns=False) for s in await store.history(20)]
        return len([r for r in records if r is not None and r.thread is not None]) >= count

    await until(threaded)
    return {s.topic: s.id for s in await store.history(20)}


async def writers(peer: SlackAPIPeer, store: DebateLog, debate_id: str) -> set[str]:
    """The fronts (by token) that wrote into the debate's thread or edited its root: its renderers."""
    record = await store.get_debate(debate_id, turns=False)
    assert record is not None and record.thread is not None
    ids = {m.message_id for m in (await store.messages(debate_id)).values()}
    names = {token: name for name, token in TOKENS.items()}
    return {names[c.params["token"]] for c in peer.calls if c.ok and (
        (c.method == "chat.postMessage" and c.params.get("thread_ts") == record.thread)
        or (c.method == "chat.update" and c.params.get("ts") in ids))}


async def completed_and_shown(store: DebateLog, peer: SlackAPIPeer, tmp_path: Path, ids: list[str]) -> None:
    for debate_id in ids:
        record = await store.get_debate(debate_id, turns=False)
        assert record is not None and record.status == "completed" and record.thread is not None
        assert (await store.messages(debate_id))["root"].final
        assert_each_message_once(peer, record.channel or "", record.thread, tmp_path / "d.db", debate_id)


async def test_each_workspace_is_rendered_by_one_front_whichever_front_took_the_command(tmp_path: Path) -> None:
    gate = asyncio.Event()
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        llm.add_rule(Reply(text="Opening, held until every debate has started.", gate=gate), match=OPENING)
        async with worker(tmp_path, peer, llm), front(tmp_path, peer, llm, "a") as a, \
                front(tmp_path, peer, llm, "b") as b:
            tail_a, tail_b = a.runtime.tailer, b.runtime.tailer
            assert tail_a is not None and tail_b is not None and tail_a.renderer != tail_b.renderer
            await take(a, "T1")
            await take(b, "T2")
            await start(a, peer, "Monorepo or polyrepo?", "T1")
            await start(b, peer, "Tabs or spaces?", "T2")
            await until(lambda: _holds(tail_a, "T1"))
            await until(lambda: _holds(tail_b, "T2"))
            # now each front takes a command in the other's workspace: it posts the root, the holder renders
            await start(a, peer, "Rust or Go?", "T2")
            await start(b, peer, "Vim or Emacs?", "T1")
            ids = await debate_ids(a.core.store, 4)
            await tail_a.sweep()  # the holders pick the new threads up (their timers would, within SWEEP_S)
            await tail_b.sweep()
            assert sorted(tail_a.following) == sorted([ids["Monorepo or polyrepo?"], ids["Vim or Emacs?"]])
            assert sorted(tail_b.following) == sorted([ids["Tabs or spaces?"], ids["Rust or Go?"]])
            gate.set()
            await a.settle()
            await b.settle()
            store = a.core.store
            assert {topic: await writers(peer, store, i) for topic, i in ids.items()} == {
                "Monorepo or polyrepo?": {"a"}, "Tabs or spaces?": {"b"}, "Rust or Go?": {"b"}, "Vim or Emacs?": {"a"}}
            roots = [c.params["token"] for c in peer.of("chat.postMessage") if c.ok and "thread_ts" not in c.params]
            assert sorted(roots) == sorted([TOKENS["a"], TOKENS["b"]] * 2)  # each root by its command's front
            await completed_and_shown(store, peer, tmp_path, list(ids.values()))


async def test_a_front_that_dies_has_its_threads_taken_over_once_its_lease_runs_out(tmp_path: Path) -> None:
    gate = asyncio.Event()
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        llm.add_rule(Reply(text="Opening, held while a front dies.", gate=gate), match=OPENING)
        async with worker(tmp_path, peer, llm), front(tmp_path, peer, llm, "b", QUICK) as b:
            tail_b = b.runtime.tailer
            assert tail_b is not None
            async with front(tmp_path, peer, llm, "a", QUICK) as a:
                tail_a = a.runtime.tailer
                assert tail_a is not None
                await take(a, "T1")
                await take(b, "T2")
                await start(a, peer, "Monorepo or polyrepo?", "T1")
                await start(b, peer, "Tabs or spaces?", "T2")
                ids = await debate_ids(b.core.store, 2)
                await until(lambda: _holds(tail_a, "T1"))
                await until(lambda: _holds(tail_b, "T2"))
                await tail_a.aclose(release=False)  # a dies: its leases are left to run out
                died = time.monotonic()
            assert "T1" not in tail_b.held  # a's lease still runs
            await until(lambda: _holds(tail_b, "T1"))  # b's timer takes T1 once it ran out
            await tail_b.sweep()  # and follows its thread (the timer's sweep may still be at it)
            assert sorted(tail_b.following) == sorted(ids.values())
            gate.set()
            await b.settle()
            store = b.core.store
            await completed_and_shown(store, peer, tmp_path, list(ids.values()))
            assert "b" in await writers(peer, store, ids["Monorepo or polyrepo?"])  # b finished a's thread
            assert await writers(peer, store, ids["Tabs or spaces?"]) == {"b"}
            assert not [c for c in peer.calls if c.at >= died and c.params.get("token") == TOKENS["a"]]


async def test_a_front_that_stops_gracefully_hands_its_threads_over_at_once(tmp_path: Path) -> None:
    gate = asyncio.Event()
    slow = (600.0, 600.0)  # a lease that would outlast the test: only a release can free it
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        llm.add_rule(Reply(text="Opening, held while a front stops.", gate=gate), match=OPENING)
        async with worker(tmp_path, peer, llm), front(tmp_path, peer, llm, "b", slow) as b:
            tail_b = b.runtime.tailer
            assert tail_b is not None
            async with front(tmp_path, peer, llm, "a", slow) as a:
                tail_a = a.runtime.tailer
                assert tail_a is not None
                await take(a, "T1")
                await start(a, peer, "Monorepo or polyrepo?", "T1")
                (debate_id,) = (await debate_ids(a.core.store, 1)).values()
                await until(lambda: _holds(tail_a, "T1"))
                assert await tail_b.sweep() == [] and tail_b.held == set()  # a holds T1
            # a stopped (SIGTERM): its workspaces are free now, not in ten minutes
            assert await tail_b.sweep() == [debate_id]
            gate.set()
            await b.settle()
            store = b.core.store
            await completed_and_shown(store, peer, tmp_path, [debate_id])
            assert "b" in await writers(peer, store, debate_id)


async def take(bot: SlackBot, workspace: str) -> None:
    """Settle who holds which workspace before the debates start: otherwise any front's sweep may
    take a free workspace first (correct, but not what these tests look at)."""
    tailer = bot.runtime.tailer
    assert tailer is not None
    assert await bot.core.store.claim_workspaces(tailer.renderer, "slack", [workspace], tailer.lease_s) == [workspace]


async def _holds(tailer: Any, workspace: str) -> bool:
    return workspace in tailer.held
