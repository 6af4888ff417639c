"""A slash command's ack does not wait for bolt: over real HTTP into the HTTP-mode server, bolt's dispatch
(its middleware, the listener, the command's work) runs after the 200, so nothing it waits on, and no
command's work, sits in front of an ack. Other requests (buttons, modals) are still answered by bolt."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bots.slack.surface import slack_limits
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings

ANSWERED_WITHIN_S = 10.0  # a bound for a test that would otherwise hang, not a latency figure


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        yield p


@pytest.fixture
async def bot(tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer) -> AsyncIterator[SlackBot]:
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url)
    async with SlackBot(settings, slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05),
                        role="front") as b:
        yield b


def hold_commands(bot: SlackBot) -> tuple[asyncio.Event, asyncio.Event]:
    """A bolt middleware that holds every slash command until released: (entered, release)."""
    entered, release = asyncio.Event(), asyncio.Event()

    async def held(body: dict[str, Any], next_: Callable[[], Awaitable[None]]) -> None:
        if "command" in body:
            entered.set()
            await release.wait()
        await next_()

    bot.app.use(held)
    return entered, release


async def test_a_slash_command_is_answered_before_bolt_runs_it(bot: SlackBot, peer: SlackAPIPeer) -> None:
    entered, release = hold_commands(bot)
    posting = asyncio.create_task(bot.command("help", peer))
    done, _ = await asyncio.wait({posting}, timeout=ANSWERED_WITHIN_S)
    assert posting in done, "the ack waited for bolt's dispatch"
    assert posting.result()[0] == 200
    await entered.wait()  # bolt runs the command after its ack
    assert not peer.of("response_url"), "the command has not run yet"
    release.set()
    await bot.settle()
    assert any("debate" in c.params.get("text", "") for c in peer.of("response_url")), "help was answered"

