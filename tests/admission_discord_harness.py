"""What test_admission_discord.py shares with other test modules, moved here so that no test module imports
another: `DANA`, `LEE`, `debated`, `settings_for`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bots.discord import DebateBot
from bots.settings import load_settings
from orchestrator.config import Settings
from tests.discord_team_harness import SIDE_CHANNEL, finished, options, start
from tests.fakes.discord_api import MEMBER_PERMISSIONS, TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer

DANA, LEE, NEWCOMER = "740000000000000401", "740000000000000402", "740000000000000403"


PRIVATE_CHANNEL = "730000000000000009"


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS) as server:
        server.add_channel(SIDE_CHANNEL, "random")
        server.add_channel(PRIVATE_CHANNEL, "board-room", hidden=True)
        yield server


def settings_for(tmp_path: Path, llm: FakeLLMServer, peer: DiscordPeer, **limits: int) -> Settings:
    return load_settings(
        DEBATE_DB=str(tmp_path / "debates.db"), DEBATE_MAX_RETRIES=0, DEBATE_CHAT_MODELS="openai:*,anthropic:*",
        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm.anthropic_base_url,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
        **{name: str(value) for name, value in limits.items()},
    )


async def debated(bot: DebateBot, peer: DiscordPeer, topic: str, user: str) -> tuple[str, str]:
    debate_id, root = await start(peer, peer.slash_command("debate", options(topic), user_id=user))
    await finished(bot, peer, root)
    return debate_id, root
