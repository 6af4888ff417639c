"""What test_discord_tenancy.py shares with other test modules, moved here so that no test module imports another:
`INSIDER`, `OTHER_GUILD`, `_start_held`, `peer`, `settings`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.settings import load_settings
from orchestrator.app import Core
from orchestrator.config import Settings
from tests.fakes.discord_api import (
    MEMBER_PERMISSIONS,
    TOKEN,
    DiscordPeer,
)
from tests.fakes.llm_server import FakeLLMServer, Reply

PRIVATE_CHANNEL = "730000000000000002"


SIDE_CHANNEL = "730000000000000003"  # another public channel of the same guild


OTHER_GUILD = "720000000000000099"


OTHER_GUILD_CHANNEL = "730000000000000099"


INSIDER = "740000000000000201"  # a member of the private channel


def _verdict(recommendation: str) -> str:
    return json.dumps({"winner": "A", "reasoning": "A gave numbers.", "ratings": {}, "agreements": [],
                       "disagreements": [], "unresolved": [], "recommendation": recommendation})


def _options(topic: str, proposer: str, judge: str) -> dict[str, Any]:
    return {"topic": topic, "rounds": 1, "proposer": proposer, "challenger": "anthropic:claude-sonnet-4-6",
            "judge": judge}


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS) as server:
        server.add_channel(PRIVATE_CHANNEL, "board-room", hidden=True)
        server.add_channel(SIDE_CHANNEL, "random")
        server.add_channel(OTHER_GUILD_CHANNEL, "elsewhere", guild_id=OTHER_GUILD)
        yield server


@pytest.fixture
def settings(tmp_path: Path, llm_server: FakeLLMServer, peer: DiscordPeer) -> Settings:
    llm_server.add_rule(Reply(text=_verdict("Zephyrplan: buy it through a holding company.")), match="judge-private")
    llm_server.add_rule(Reply(text=_verdict("Use Kafka for the audit log.")), match="judge-1")
    llm_server.add_rule(Reply(text="Zephyrturn: their cash flow covers the price twice."), match="gpt-private")
    llm_server.add_rule(Reply(text="Kafka keeps an ordered, replayable log."), match="gpt-5")
    llm_server.add_rule(Reply(text="A queue is simpler to run."), match="claude-sonnet-4-6")
    return load_settings(
        DEBATE_DB=str(tmp_path / "debates.db"),
        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
        DEBATE_MAX_RETRIES=0,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
    )


async def _start_held(peer: DiscordPeer, llm_server: FakeLLMServer, core: Core, requester: str
                      ) -> tuple[str, asyncio.Event]:
    """A debate from `requester` in the public channel whose proposer waits for the returned gate."""
    gate = asyncio.Event()
    llm_server.add_rule(Reply(text="Held, then answered.", gate=gate), match="gpt-held", times=1)
    held = len(llm_server.requests) + 1
    await peer.dispatch_interaction(peer.slash_command(
        "debate", _options("Tabs or spaces?", "openai:gpt-held", "openai:judge-1"), user_id=requester))
    assert (await llm_server.wait_for_requests(held)).model == "gpt-held"  # logged, running, and held
    (newest,) = await core.store.history(1)
    assert newest.status == "running"
    return newest.id, gate
