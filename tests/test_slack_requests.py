"""Requests into the Slack app over real HTTP: signatures, acks, bad input, retries, recall commands."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from slack_sdk.signature import SignatureVerifier

from bots.slack.surface import slack_limits
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, sign, slack_settings, slash_body
from tests.llm_scripts import script_judge

SLACK_EXAMPLE_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SLACK_EXAMPLE_BODY = (
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&"
    "channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&"
    "response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
    "trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        yield p


@pytest.fixture
async def bot(tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer) -> AsyncIterator[SlackBot]:
    script_judge(llm_server)
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url)
    async with SlackBot(settings, slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05)) as b:
        yield b


def ephemeral(peer: SlackAPIPeer) -> list[str]:
    return [c.params.get("text", "") for c in peer.of("response_url") if c.params.get("response_type") == "ephemeral"]


def test_signature_matches_slacks_published_example() -> None:
    headers = sign(SLACK_EXAMPLE_SECRET, SLACK_EXAMPLE_BODY, 1531420618)
    assert headers["X-Slack-Signature"] == "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
    verifier = SignatureVerifier(SLACK_EXAMPLE_SECRET, clock=type("Clock", (), {"now": lambda self: 1531420618.0})())
    assert verifier.is_valid(SLACK_EXAMPLE_BODY, headers["X-Slack-Request-Timestamp"], headers["X-Slack-Signature"])


@pytest.mark.slow
async def test_forged_and_stale_signatures_are_refused(bot: SlackBot, peer: SlackAPIPeer) -> None:
    forged, _ = await bot.post(slash_body("help"), secret="not-the-secret")
    stale, _ = await bot.post(slash_body("help"), timestamp=1531420618)
    assert (forged, stale) == (401, 401)
    assert not peer.calls, "a refused request must not reach Slack's API"


@pytest.mark.slow
async def test_healthz(bot: SlackBot) -> None:
    async with bot.http.get(f"{bot.url}/healthz") as response:
        assert response.status == 200
        assert (await response.json())["ok"] is True


@pytest.mark.slow
async def test_help_is_acked_then_answered_ephemerally(bot: SlackBot, peer: SlackAPIPeer) -> None:
    status, _ = await bot.command("help", peer)
    assert status == 200
    await bot.settle()
    assert any("/debate <topic>" in text for text in ephemeral(peer))
    assert max(bot.ack_seconds) < 3.0, bot.ack_seconds  # recorded; Slack's deadline, not a benchmark


@pytest.mark.slow
@pytest.mark.parametrize(("text", "needle"), [
    ("Should we? --colour red", "Unknown option `--colour`"),
    ("x" * 5000, "the limit is 4,000"),
    ("Tabs or spaces --rounds 9", "Rounds must be a whole number from 1 to 5."),
    ("show", "takes one debate id"),
])
async def test_bad_input_explains_and_starts_nothing(bot: SlackBot, peer: SlackAPIPeer, text: str, needle: str) -> None:
    status, _ = await bot.command(text, peer)
    assert status == 200
    await bot.settle()
    assert any(needle in t for t in ephemeral(peer)), ephemeral(peer)
    assert not peer.of("chat.postMessage")
    assert await bot.core.store.history(10) == []


@pytest.mark.slow
async def test_a_retried_command_starts_one_debate(bot: SlackBot, peer: SlackAPIPeer) -> None:
    body = slash_body("Monorepo or polyrepo?", trigger="trig-42", response_url=peer.response_url())
    first, _ = await bot.post(body)
    retry, _ = await bot.post(body, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert (first, retry) == (200, 200)
    await bot.settle()
    roots = [c for c in peer.of("chat.postMessage") if "thread_ts" not in c.params]
    assert len(roots) == 1
    assert len(await bot.core.store.history(10)) == 1


@pytest.mark.slow
async def test_recall_commands(bot: SlackBot, peer: SlackAPIPeer) -> None:
    await bot.command("Kafka or RabbitMQ for the audit log?", peer)
    await bot.settle()
    (summary,) = await bot.core.store.history(5)
    for text in ("history", "search kafka", f"show {summary.id}", "models", f"stop {summary.id}", "show ffff0000"):
        await bot.command(text, peer)
    await bot.settle()
    answers = ephemeral(peer)
    assert any("Recent debates" in a and summary.id in a for a in answers)
    assert any("result" in a and summary.id in a and "peer.slack/archives" in a for a in answers)
    assert any("*Winner:*" in a and "Adopt it behind a feature flag" in a for a in answers)
    assert any("Models you can use here" in a and "`openai:" in a for a in answers)
    assert any(f"No running debate with id `{summary.id}`" in a for a in answers)
    assert any("No debate with id `ffff0000`" in a for a in answers)


@pytest.mark.slow
async def test_the_ack_is_the_listeners_return_not_a_polled_flag(bot: SlackBot, peer: SlackAPIPeer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """bolt polls for an ack every 10 ms when it runs a listener as a task: on a front busy rendering threads
    each poll queues behind that work. Our listeners ack first and spawn the rest, so bolt answers when the
    listener returns, without polling."""
    from slack_bolt.listener import asyncio_runner

    polls: list[float] = []
    real_sleep = asyncio_runner.asyncio.sleep

    async def recording_sleep(delay: float, *args: object) -> object:
        if sys._getframe(1).f_code.co_filename == asyncio_runner.__file__:  # bolt's runner, nobody else
            polls.append(delay)
        return await real_sleep(delay, *args)

    monkeypatch.setattr(asyncio_runner.asyncio, "sleep", recording_sleep)
    status, _ = await bot.command("help", peer)
    await bot.settle()
    assert status == 200
    assert any("/debate <topic>" in text for text in ephemeral(peer))
    assert polls == []
