"""A slash command's ack does not wait for bolt: over real HTTP into the HTTP-mode server, bolt's dispatch
(its middleware, the listener, the command's work) runs after the 200, so nothing it waits on, and no
command's work, sits in front of an ack. Other requests (buttons, modals) are still answered by bolt.

The route runs on the HTTP server's own loop (bots/web.py): a command is acked, and a bad request refused,
while the main loop is stalled by a synchronous wait (the client on a thread of its own)."""

from __future__ import annotations

import asyncio
import threading
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from bots.slack.surface import slack_limits
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SIGNING_SECRET, SlackAPIPeer, SlackBot, sign, slack_settings, slash_body

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



def post_from_a_thread(url: str, body: str, headers: dict[str, str]) -> tuple[threading.Thread, threading.Event,
                                                                              list[int]]:
    """POST `body` from a thread of its own (a client the main loop does not run); (thread, answered, [status])."""
    answered, status = threading.Event(), []

    def post() -> None:
        request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=ANSWERED_WITHIN_S) as response:
                status.append(response.status)
        except urllib.error.HTTPError as refused:
            status.append(refused.code)
        answered.set()

    thread = threading.Thread(target=post, name="slack-client")
    thread.start()
    return thread, answered, status


def stall_until(answered: threading.Event) -> bool:
    """Block the main loop synchronously (no await: nothing of it runs) until `answered` is set."""
    return answered.wait(ANSWERED_WITHIN_S)


def signed(body: str, secret: str = SIGNING_SECRET) -> dict[str, str]:
    return {"Content-Type": "application/x-www-form-urlencoded", **sign(secret, body)}


async def test_a_slash_command_is_answered_while_the_main_loop_is_stalled(bot: SlackBot, peer: SlackAPIPeer) -> None:
    acks = REGISTRY.get_sample_value("debate_command_ack_seconds_count", {"platform": "slack"}) or 0.0
    recorded = len(bot.runtime.ack_times)
    body = slash_body("help", response_url=peer.response_url())
    thread, answered, status = post_from_a_thread(f"{bot.url}/slack/events", body, signed(body))
    assert stall_until(answered), "the ack waited for the main loop"
    assert status == [200]
    assert not peer.of("response_url"), "nothing of the command ran while the main loop was stalled"
    await asyncio.to_thread(thread.join)
    await bot.settle()
    assert any("debate" in c.params.get("text", "") for c in peer.of("response_url")), "bolt ran the command after"
    assert len(bot.runtime.ack_times) == recorded + 1
    assert REGISTRY.get_sample_value("debate_command_ack_seconds_count", {"platform": "slack"}) == acks + 1


async def test_refusals_are_answered_while_the_main_loop_is_stalled(bot: SlackBot, peer: SlackAPIPeer) -> None:
    body = slash_body("help", response_url=peer.response_url())
    unreadable = "payload=%7Bnot-json"
    refused: list[int] = []
    for headers, sent in ((signed(body, secret="not-the-secret"), body), (signed(unreadable), unreadable)):
        thread, answered, status = post_from_a_thread(f"{bot.url}/slack/events", sent, headers)
        assert stall_until(answered), "the refusal waited for the main loop"
        await asyncio.to_thread(thread.join)
        refused += status
    assert refused == [401, 400]
    await bot.settle()
    assert not peer.of("response_url"), "nothing refused ran"
