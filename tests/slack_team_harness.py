"""What test_slack_team.py shares with other test modules, moved here so that no test module imports another:
`LIMITS`, `answer`, `ask`, `debated`, `root_of`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.slack.surface import slack_limits
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import (
    Message,
    SlackAPIPeer,
    SlackBot,
    slack_settings,
)

LIMITS = slack_limits(post_interval=0.01, updates=1000, window=1.0, edit_interval=0.05)


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        p.declare_user("U5", display_name="Dana Scully", real_name="Dana Katherine Scully")
        p.declare_user("U6", real_name="Lee Adama")
        p.declare_user("U9", "admin")
        yield p


@pytest.fixture
async def bot(tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer) -> AsyncIterator[SlackBot]:
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url,
                              DEBATE_CHAT_MODELS="openai:*,anthropic:*")
    async with SlackBot(settings, LIMITS) as b:
        yield b


_keys = iter(range(1_000_000))


async def ask(bot: SlackBot, peer: SlackAPIPeer, text: str, **kwargs: Any) -> str:
    """Send `/debate text`; returns the response_url key its answers arrive under."""
    key = f"k{next(_keys)}"
    status, _ = await bot.command(text, peer, response_url=peer.response_url(key), **kwargs)
    assert status == 200
    return key


def answers(peer: SlackAPIPeer, key: str) -> list[str]:
    return [c.params.get("text", "") for c in peer.of("response_url")
            if c.params.get("response_type") == "ephemeral" and c.params["key"] == key]


async def answer(peer: SlackAPIPeer, key: str) -> str:
    await peer.wait_for(lambda p: answers(p, key))
    (text,) = answers(peer, key)
    return text


async def new_debate(bot: SlackBot, before: set[str]) -> str:
    (debate_id,) = [s.id for s in await bot.core.store.history(100) if s.id not in before]
    return debate_id


async def debated(bot: SlackBot, peer: SlackAPIPeer, text: str, channel: str = "C1", user: str = "U2") -> str:
    """Run a debate with `/debate text` to its end; returns its id."""
    before = {s.id for s in await bot.core.store.history(100)}
    await ask(bot, peer, text, channel=channel, user=user)
    await bot.settle()
    return await new_debate(bot, before)


async def root_of(bot: SlackBot, peer: SlackAPIPeer, debate_id: str) -> Message:
    record = await bot.core.store.get_debate(debate_id, turns=False)
    assert record is not None and record.channel and record.thread
    return peer.message(record.channel, record.thread)
