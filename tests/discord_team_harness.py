"""What test_discord_team.py shares with other test modules, moved here so that no test module imports another:
`CLAUDE`, `FAST`, `GPT`, `SIDE_CHANNEL`, `ask`, `finished`, `options`, `start`, `verdict_messages`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.discord import DebateBot
from bots.discord.surface import discord_limits
from bots.settings import load_settings
from orchestrator.app import Core
from orchestrator.config import Settings
from tests.discord_harness import connected
from tests.fakes.discord_api import (
    MEMBER_PERMISSIONS,
    TOKEN,
    DiscordPeer,
)
from tests.fakes.llm_server import FakeLLMServer

FAST = discord_limits(writes=1000, window=1.0, edit_interval=0.05)


GPT, CLAUDE = "openai:gpt-5", "anthropic:claude-sonnet-4-6"


SIDE_CHANNEL = "730000000000000003"


DANA, LEE, MODERATOR = "740000000000000301", "740000000000000302", "740000000000000303"


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS,
                           names={DANA: "Dana Scully", LEE: "Lee Adama"}) as server:
        server.add_channel(SIDE_CHANNEL, "random")
        yield server


@pytest.fixture
def settings(tmp_path: Path, llm_server: FakeLLMServer, peer: DiscordPeer) -> Settings:
    return load_settings(
        DEBATE_DB=str(tmp_path / "debates.db"),
        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
        DEBATE_MAX_RETRIES=0, DEBATE_CHAT_MODELS="openai:*,anthropic:*",
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
    )


@pytest.fixture
async def core(settings: Settings) -> AsyncIterator[Core]:
    async with await Core.open(settings) as opened:
        yield opened


@pytest.fixture
async def bot(core: Core) -> AsyncIterator[DebateBot]:
    async with connected(core, pacing=FAST) as client:
        yield client


def said(answers: list[dict[str, Any]]) -> str:
    """Everything the bot answered, as one string to search."""
    return json.dumps(answers, ensure_ascii=False)


async def ask(peer: DiscordPeer, payload: dict[str, Any]) -> str:
    """Dispatch one interaction; the bot's private answer to it, once there is one."""
    record = await peer.dispatch_interaction(payload)
    await peer.wait_for(lambda: record.ephemeral, within=20)
    return said(record.ephemeral)


def options(topic: str, rounds: int = 1, **more: Any) -> dict[str, Any]:
    return {"topic": topic, "rounds": rounds, "proposer": GPT, "challenger": CLAUDE, "judge": "openai:judge-1",
            **more}


def custom_ids(message: dict[str, Any]) -> list[str]:
    return [c["custom_id"] for row in message["components"] for c in row.get("components", []) if "custom_id" in c]


def verdict_messages(peer: DiscordPeer, thread_id: str) -> list[dict[str, Any]]:
    return [m for m in peer.channel_messages(thread_id) if any(c.startswith("debate:vote:") for c in custom_ids(m))]


async def start(peer: DiscordPeer, payload: dict[str, Any]) -> tuple[str, str]:
    """Dispatch a start (`/debate` or `/debate-rematch`); the id of the debate it started (named in its root
    message's footer) and that root message's id, which is also its thread's."""
    record = await peer.dispatch_interaction(payload)
    await peer.wait_for(lambda: record.original is not None or record.ephemeral, within=10)
    assert record.original is not None, said(record.answers)
    footer = peer.messages[record.original]["embeds"][0]["footer"]["text"]
    return footer.split()[1], record.original


async def finished(bot: DebateBot, peer: DiscordPeer, root: str) -> None:
    """Wait until the debate's root message says it finished and its thread shows all of it."""
    await peer.wait_for(lambda: "Finished" in json.dumps(peer.messages[root]["embeds"]), within=60)
    await bot.output.rendered()
