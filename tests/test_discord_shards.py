"""Discord sharded over two processes' worth of bots (DISCORD_SHARD_IDS 0 and 1 of DISCORD_SHARD_COUNT 2)
against the loopback gateway, sharing one log and a worker: each bot connects only its shard, hears only
its guild's interactions, and renders only its guild's threads, even when the other bot is gone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bots.discord import DebateBot, ShardedDebateBot, debate_bot, point_discord_at
from bots.settings import load_settings
from orchestrator.app import Core
from tests.discord_harness import running
from tests.durable_serve_harness import OPENING, until
from tests.fakes.discord_api import CHANNEL_ID, GUILD_ID, TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

OTHER_GUILD = "720000000004194305"  # (id >> 22) % 2 == 0; GUILD_ID is on shard 1
OTHER_CHANNEL = "730000000000000002"


def settings(tmp_path: Path, peer: DiscordPeer, llm: FakeLLMServer, shard: str | None) -> Any:
    sharding = {} if shard is None else {"DISCORD_SHARD_COUNT": 2, "DISCORD_SHARD_IDS": shard}
    return load_settings(
        DEBATE_DB=str(tmp_path / "d.db"), DEBATE_MAX_RETRIES=0, DEBATE_ROUNDS=1,
        OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=llm.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test-key-123456", ANTHROPIC_BASE_URL=llm.anthropic_base_url,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
        **sharding)


@asynccontextmanager
async def shard_bot(tmp_path: Path, peer: DiscordPeer, llm: FakeLLMServer, shard: str) -> AsyncIterator[DebateBot]:
    """A front (`debate serve --front-only --name s<shard>`) running the bot on one shard."""
    async with await Core.open(settings(tmp_path, peer, llm, shard), role="front", name=f"s{shard}") as core:
        point_discord_at(core.settings)
        bot = debate_bot(core, guild_ready_timeout=0.05)
        assert isinstance(bot, ShardedDebateBot)
        async with running(bot):
            yield bot


async def test_each_shard_renders_only_its_guilds_threads(tmp_path: Path) -> None:
    gate = asyncio.Event()
    async with DiscordPeer() as peer, FakeLLMServer() as llm:
        peer.add_guild(OTHER_GUILD, "Other Club", OTHER_CHANNEL)
        script_judge(llm)
        llm.add_rule(Reply(text="Opening, held until both debates run.", gate=gate), match=OPENING)
        worker = await Core.open(settings(tmp_path, peer, llm, None), role="worker", name="w1")
        try:
            async with shard_bot(tmp_path, peer, llm, "0") as zero, shard_bot(tmp_path, peer, llm, "1") as one:
                assert sorted(s for s in peer.shards if s is not None) == [(0, 2), (1, 2)]
                assert [g.id for g in zero.guilds] == [int(OTHER_GUILD)]
                assert [g.id for g in one.guilds] == [int(GUILD_ID)]
                assert zero.gateway_up() and one.gateway_up()
                here = await peer.dispatch_interaction(peer.slash_command("debate", {"topic": "Tabs or spaces?"}))
                there = await peer.dispatch_interaction(
                    peer.slash_command("debate", {"topic": "Rust or Go?"}, channel_id=OTHER_CHANNEL))
                tail_zero, tail_one = zero.output.tailer, one.output.tailer
                assert tail_zero is not None and tail_one is not None
                # a followed thread's workspace is claimed by its task, a moment after it is followed
                await until(lambda: len(tail_zero.following) == 1 and len(tail_one.following) == 1
                            and bool(tail_zero.held) and bool(tail_one.held))
                history = {d.topic: d for d in await zero.core.store.history(10)}
                assert history["Tabs or spaces?"].id in tail_one.following  # GUILD_ID: shard 1
                assert history["Rust or Go?"].id in tail_zero.following  # OTHER_GUILD: shard 0
                assert here.answers and there.answers  # each answered by the bot of its shard
                assert tail_zero.held == {OTHER_GUILD} and tail_one.held == {GUILD_ID}

                # shard 1's bot stops: its guild's thread is not shard 0's to take, whatever its lease
                await tail_one.aclose()
                assert await tail_zero.sweep() == [] and tail_zero.held == {OTHER_GUILD}
                gate.set()
                await zero.output.rendered()
                finished = await zero.core.store.get_debate(history["Rust or Go?"].id, turns=False)
                assert finished is not None and finished.status == "completed"
                assert (await zero.core.store.messages(finished.id))["root"].final
                unshown = await zero.core.store.messages(history["Tabs or spaces?"].id)
                assert not unshown["root"].final  # left for shard 1's next start
            assert {t["guild_id"] for t in peer.threads()} == {GUILD_ID, OTHER_GUILD}
            assert {m["channel_id"] for m in peer.messages.values()} >= {CHANNEL_ID, OTHER_CHANNEL}
        finally:
            await worker.close()
