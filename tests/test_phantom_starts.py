"""A front that stops while a Discord `/debate` starts (issue 57, item 17): the debate is admitted (it holds
the user's, the channel's and the global slots) and the front dies before its thread is recorded. The
fronts' sweep ends such a start once no front can still be making it, freeing its slots; a start that was
only slow, and finds its debate ended when it gets there, withdraws and tells the user.

Killed: a real `debate serve --discord` subprocess is sent SIGKILL at the moment Discord receives its answer
to the interaction (the root message: after the admission, before the thread), then another front starts
on the same log. Stuck: a front whose root post the Discord peer holds back (a fault-injection seam at the
peer), its own sweep ending the start meanwhile. Real discord.py, the loopback Discord peer, SQLite files."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from bots.settings import load_settings
from bots.thread import tail
from bots.thread.start import TOO_SLOW
from bots.thread.tail import START_CUT_OFF
from orchestrator.app import Core
from orchestrator.log import DebateRecord, Store
from tests.cli_harness import clean_env
from tests.discord_harness import connected
from tests.durable_serve_harness import spawn
from tests.fakes.discord_api import TOKEN, Call, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer
from tests.llm_scripts import script_judge
from tests.serve_harness import discord_verdict_posted, free_port, health_until

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

USER = "740000000000000101"


def env_for(tmp_path: Path, llm: FakeLLMServer, peer: DiscordPeer) -> dict[str, str]:
    return clean_env(
        tmp_path, OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=llm.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test-key-123456", ANTHROPIC_BASE_URL=llm.anthropic_base_url,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
        DEBATE_ROUNDS="1", DEBATE_MAX_RUNNING_PER_USER="1",
    )


def is_callback(call: Call) -> bool:
    return call.method == "POST" and call.path.startswith("/interactions/") and call.path.endswith("/callback")


async def debates(path: Path) -> list[DebateRecord]:
    async with Store(path, readonly=True) as store:
        found = [await store.get_debate(d.id, turns=False) for d in await store.history(20)]
    return [d for d in found if d is not None]


def refused(peer: DiscordPeer, interaction_id: str) -> list[str]:
    return [json.dumps(a) for a in peer.interactions[interaction_id].ephemeral]


async def test_discord_a_front_killed_while_a_debate_starts_leaves_no_phantom_after_the_next_sweep(
    tmp_path: Path,
) -> None:
    async with DiscordPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A")
        env = env_for(tmp_path, llm, peer)
        port = free_port()
        front = await spawn(tmp_path, env, "serve", "--discord", "--host", "127.0.0.1", "--port", str(port))
        killed = asyncio.Event()

        async def kill_at_the_root(call: Call) -> None:
            if is_callback(call) and not killed.is_set():  # Discord has the root; the front never hears back
                front.send_signal(signal.SIGKILL)
                await front.wait()
                killed.set()

        try:
            await health_until(f"http://127.0.0.1:{port}/healthz", front, 200)
            peer.on_call = kill_at_the_root
            first = peer.slash_command("debate", {"topic": "Tabs or spaces?"}, user_id=USER)
            await peer.dispatch_interaction(first)
            await asyncio.wait_for(killed.wait(), 60)
        finally:
            if front.returncode is None:
                front.kill()
            await front.communicate()
        peer.on_call = None
        log = tmp_path / "debates.db"
        (phantom,) = await debates(log)
        assert (phantom.status, phantom.thread) == ("running", None)  # admitted, holding the user's one slot

        settings = load_settings(**{k: v for k, v in env.items() if k.startswith(("DEBATE_", "OPENAI_", "ANTHROPIC_",
                                                                                  "DISCORD_"))})
        async with await Core.open(settings) as core, connected(core) as bot:  # the front that comes back
            ended = await core.store.get_debate(phantom.id, turns=False)
            assert ended is not None and (ended.status, ended.error) == ("failed", START_CUT_OFF)
            again = peer.slash_command("debate", {"topic": "Tabs or spaces, again?"}, user_id=USER)
            await peer.dispatch_interaction(again)
            await peer.wait_for(lambda: len(peer.threads()) == 1, within=30)  # the user's slot was free
            await peer.wait_for(lambda: discord_verdict_posted(peer), within=60)
            await bot.output.rendered()
        assert not refused(peer, again["id"])
        statuses = sorted((d.status, d.error) for d in await debates(log))
        assert statuses == [("completed", None), ("failed", START_CUT_OFF)]


async def test_discord_a_start_stuck_past_the_limit_is_ended_by_the_sweep_and_then_withdrawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tail, "START_LIMIT_S", 0.5)
    async with DiscordPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A")
        env = env_for(tmp_path, llm, peer)
        settings = load_settings(**{k: v for k, v in env.items() if k.startswith(("DEBATE_", "OPENAI_", "ANTHROPIC_",
                                                                                  "DISCORD_"))})
        held = asyncio.Event()
        release = asyncio.Event()

        async def hold_the_root(call: Call) -> None:
            if is_callback(call) and not held.is_set():
                held.set()
                await release.wait()

        async with await Core.open(settings) as core, connected(core) as bot:
            assert bot.output.tailer is not None
            bot.output.tailer.sweep_s = 0.1
            peer.on_call = hold_the_root
            first = peer.slash_command("debate", {"topic": "Tabs or spaces?"}, user_id=USER)
            await peer.dispatch_interaction(first)
            await asyncio.wait_for(held.wait(), 30)
            (stuck,) = await core.store.history(5)

            async def ended() -> Any:
                record = await core.store.get_debate(stuck.id, turns=False)
                return record is not None and record.status == "failed"

            async with asyncio.timeout(30):
                while not await ended():  # noqa: ASYNC110 (the sweep runs in the bot's own task)
                    await asyncio.sleep(0.05)
            # the user's slot is free already, while the stuck start still waits on Discord
            second = peer.slash_command("debate", {"topic": "Tabs or spaces, again?"}, user_id=USER)
            release.set()
            await peer.wait_for(lambda: any(TOO_SLOW in a for a in refused(peer, first["id"])), within=30)
            await peer.dispatch_interaction(second)
            await peer.wait_for(lambda: discord_verdict_posted(peer), within=60)
            await bot.output.rendered()
            record = await core.store.get_debate(stuck.id, turns=False)
            assert record is not None and (record.status, record.error) == ("failed", START_CUT_OFF)
            assert not refused(peer, second["id"])
            history = {d.id: d.status for d in await core.store.history(5)}
            assert sorted(history.values()) == ["completed", "failed"]
