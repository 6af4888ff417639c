"""The debate page in Discord, with the real discord.py client against the Discord peer: the root
message and the verdict carry the page's link button (style 5, the link as its url) when
DEBATE_PUBLIC_URL is set; Discord shows the page's Open Graph card for the link itself."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.page import page_link
from bots.settings import load_settings
from orchestrator.app import Core
from tests.discord_harness import connected
from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import verdict_json
from tests.page_harness import PUBLIC_URL

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

LINK_STYLE = 5


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer() as server:
        yield server


def link_buttons(message: dict[str, Any]) -> list[str]:
    return [c["url"] for row in message.get("components") or [] for c in row.get("components", [])
            if c.get("style") == LINK_STYLE]


async def test_the_root_and_the_verdict_carry_the_page_link(tmp_path: Path, peer: DiscordPeer,
                                                            llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text=verdict_json("A", recommendation="Ship it behind a flag.")), match="judge-1")
    llm_server.add_rule(Reply(text="We should ship it."), match="gpt-5")
    llm_server.add_rule(Reply(text="I challenge that."), match="claude-sonnet-4-6")
    settings = load_settings(
        DEBATE_DB=str(tmp_path / "debates.db"), DEBATE_MAX_RETRIES=0,
        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
        DEBATE_PUBLIC_URL=PUBLIC_URL, DEBATE_WEB_SECRET="discord-page-secret-0123456789abcd",
    )
    core = await Core.open(settings)
    try:
        async with connected(core):
            options = {"topic": "Should we ship it behind a flag?", "rounds": 1, "proposer": "openai:gpt-5",
                       "challenger": "anthropic:claude-sonnet-4-6", "judge": "openai:judge-1"}
            record = await peer.dispatch_interaction(peer.slash_command("debate", options))
            thread = await peer.wait_for(lambda: peer.threads() and peer.threads()[0], within=5)
            verdict = await peer.wait_for(
                lambda: next((m for m in peer.channel_messages(thread["id"]) if link_buttons(m)), None), within=45)
            await peer.wait_for(lambda: "Finished" in json.dumps(peer.messages[record.original]["embeds"]), within=20)
            (debate,) = await core.store.history(5)
            link = await page_link(core.store, settings, debate.id)
            assert link is not None and link.startswith(f"{PUBLIC_URL}/d/{debate.id}/")
            assert link_buttons(verdict) == [link]
            assert link_buttons(peer.messages[record.original]) == [link]
    finally:
        await core.close()
