"""The chat model policy (issue 10, item 1): what Slack and Discord users may start, and what they are shown.

`cli:` tools run programs on the host, so from chat they are refused unless the operator lists them in
DEBATE_CHAT_MODELS; rounds and effort have ceilings. Requests go through bolt's real dispatch and the
real discord.py client. The `opencode` and `claude` on PATH are wrappers that append to a marker file
(a path written into the script, so no environment scrubbing can hide a run) before running the fakes:
a refused request must leave no mark, and the control shows the mark appears when a tool does run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.settings import load_settings
from bots.slack.surface import slack_limits
from orchestrator.app import Core
from orchestrator.policy import ChatPolicy, NotAllowed
from orchestrator.providers import ProviderRegistry
from tests.conftest import CLI_BIN
from tests.discord_harness import connected
from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge

LIMITS = slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=0.05)


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`opencode` and `claude` first on PATH; each run appends the tool's name to the returned file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ran = tmp_path / "tools-ran"
    for tool in ("opencode", "claude"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho {tool} >> "{ran}"\nexec "{sys.executable}" "{CLI_BIN / tool}" "$@"\n')
        script.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    for name in list(os.environ):
        if name.startswith(("DEBATE_CLI_", "FAKE_CLI_", "DEBATE_CHAT_")):
            monkeypatch.delenv(name)
    return ran


@pytest.fixture
async def slack_peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as peer:
        yield peer


def _slack(tmp_path: Path, peer: SlackAPIPeer, llm: FakeLLMServer, **extra: Any) -> SlackBot:
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url, **extra)
    return SlackBot(settings, LIMITS)


def _ran(marker: Path) -> str:
    """The tools that ran, one name a line ("" when none did)."""
    return marker.read_text() if marker.exists() else ""


def _ephemeral(peer: SlackAPIPeer) -> list[str]:
    return [c.params.get("text", "") for c in peer.of("response_url") if c.params.get("response_type") == "ephemeral"]


# ---------------------------------------------------------------- Slack, through bolt's dispatch


@pytest.mark.slow
async def test_a_cli_tool_from_slack_is_refused_privately_and_never_runs(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer, marker: Path
) -> None:
    async with _slack(tmp_path, slack_peer, llm_server) as bot:
        await bot.command("Tabs or spaces? --vs cli:opencode,openai:gpt-5", slack_peer)
        await bot.command("Tabs or spaces? --judge cli:claude", slack_peer)
        await bot.settle()
        answers = _ephemeral(slack_peer)
        assert len(answers) == 2, answers
        assert "`cli:opencode` is not allowed from chat" in answers[0] and "DEBATE_CHAT_MODELS" in answers[0]
        assert "`cli:claude` is not allowed from chat" in answers[1] and "DEBATE_CHAT_MODELS" in answers[1]
        assert not slack_peer.of("chat.postMessage")
        assert await bot.core.store.history(10) == []
    assert _ran(marker) == "", "a refused cli: tool must not start"


@pytest.mark.slow
async def test_a_cli_tool_the_operator_lists_does_run(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer, marker: Path
) -> None:
    """The control for the test above: the same request, allowed, runs the tool and leaves the mark."""
    script_judge(llm_server)
    async with _slack(tmp_path, slack_peer, llm_server, DEBATE_CHAT_MODELS="cli:opencode,openai:*") as bot:
        await bot.command("Tabs or spaces? --vs cli:opencode,openai:gpt-5 --judge openai:gpt-5 --rounds 1",
                          slack_peer)
        await bot.settle()
        (summary,) = await bot.core.store.history(5)
        assert summary.status == "completed"
    assert "opencode" in _ran(marker)


@pytest.mark.slow
async def test_the_default_seats_are_held_to_the_policy_too(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer, marker: Path
) -> None:
    async with _slack(tmp_path, slack_peer, llm_server, DEBATE_PROPOSER="cli:claude") as bot:
        await bot.command("Monorepo or polyrepo?", slack_peer)
        await bot.settle()
        (answer,) = _ephemeral(slack_peer)
        assert "proposer model `cli:claude`" in answer and "DEBATE_CHAT_MODELS" in answer
        assert not slack_peer.of("chat.postMessage")
    assert _ran(marker) == ""


@pytest.mark.slow
async def test_rounds_and_effort_above_the_chat_ceilings_are_refused(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer, marker: Path
) -> None:
    async with _slack(tmp_path, slack_peer, llm_server, DEBATE_CHAT_MAX_ROUNDS=2,
                      DEBATE_CHAT_MAX_EFFORT="medium") as bot:
        await bot.command("Tabs or spaces? --rounds 3", slack_peer)
        await bot.command("Tabs or spaces? --effort max", slack_peer)
        await bot.settle()
        rounds, effort = _ephemeral(slack_peer)
        assert "at most 2 rounds" in rounds and "DEBATE_CHAT_MAX_ROUNDS" in rounds
        assert "at most `medium` effort" in effort and "DEBATE_CHAT_MAX_EFFORT" in effort
        assert not slack_peer.of("chat.postMessage")


@pytest.mark.slow
async def test_slack_models_lists_only_what_chat_may_use(
    tmp_path: Path, slack_peer: SlackAPIPeer, llm_server: FakeLLMServer, marker: Path
) -> None:
    async with _slack(tmp_path, slack_peer, llm_server) as bot:
        await bot.command("models", slack_peer)
        await bot.settle()
    async with _slack(tmp_path, slack_peer, llm_server, DEBATE_CHAT_MODELS="openai:*,cli:claude") as bot:
        await bot.command("models", slack_peer)
        await bot.settle()
    default, listed = _ephemeral(slack_peer)
    assert "`openai:" in default and "`anthropic:" in default
    assert "cli:" not in default, "cli: tools on PATH must not be offered to chat"
    assert "`cli:claude`" in listed and "opencode" not in listed and "anthropic" not in listed


# ---------------------------------------------------------------- Discord, through the real discord.py client


@pytest.fixture
async def discord_peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer() as peer:
        yield peer


@pytest.mark.slow
async def test_a_cli_tool_from_discord_is_refused_privately_and_never_runs(
    tmp_path: Path, discord_peer: DiscordPeer, llm_server: FakeLLMServer, marker: Path
) -> None:
    peer = discord_peer
    settings = load_settings(
        DEBATE_DB=str(tmp_path / "d.db"), OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
    )
    async with await Core.open(settings) as core, connected(core):
        options = {"topic": "Tabs or spaces?", "proposer": "cli:opencode", "challenger": "openai:gpt-5"}
        refused = await peer.dispatch_interaction(peer.slash_command("debate", options))
        await peer.wait_for(lambda: refused.original is not None)
        reply = peer.messages[refused.original]
        assert reply["flags"] & 64, "the refusal is for the asker only"
        assert "`cli:opencode` is not allowed from chat" in reply["content"]
        assert "DEBATE_CHAT_MODELS" in reply["content"]

        complete = await peer.dispatch_interaction(
            peer.slash_command("debate", {"topic": "x", "judge": "c"}, autocomplete="judge"))
        await peer.wait_for(lambda: complete.callback_at is not None)
        answer = next(c.body for c in peer.calls if c.path.startswith(f"/interactions/{complete.payload['id']}/"))
        suggested = [c["value"] for c in answer["data"]["choices"]]
        assert suggested and not [m for m in suggested if m.startswith("cli:")], suggested
        assert await core.store.history(10) == []
    assert not peer.threads()
    assert _ran(marker) == ""


# ---------------------------------------------------------------- the policy's rules


def _policy(**values: Any) -> ChatPolicy:
    settings = load_settings(DEBATE_DB=":memory:", OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY="sk-ant-test",
                             **values)
    return ChatPolicy(settings, ProviderRegistry(settings))


def test_an_empty_allowlist_means_the_configured_api_providers_and_never_a_cli_tool(marker: Path) -> None:
    policy = _policy()
    assert policy.allows("openai:gpt-5") and policy.allows("anthropic:claude-opus-4-1")
    assert not policy.allows("gemini:gemini-2.5-pro")  # not configured
    assert not policy.allows("cli:claude") and not policy.allows("cli:opencode")
    assert set(policy.open_providers()) == {"anthropic", "openai"}
    assert not [m for m in policy.offered() if m.startswith("cli:")]


def test_listed_models_and_wildcards(marker: Path) -> None:
    policy = _policy(DEBATE_CHAT_MODELS="openai:gpt-5, anthropic:*, cli:claude")
    assert policy.allows("openai:gpt-5") and not policy.allows("openai:gpt-4o")
    assert policy.allows("anthropic:anything") and policy.allows("cli:claude")
    assert not policy.allows("cli:opencode")
    assert "cli:claude" in policy.offered() and "cli:opencode" not in policy.offered()
    assert _policy(DEBATE_CHAT_MODELS="cli:*").allows("cli:opencode")
    with pytest.raises(NotAllowed, match="DEBATE_CHAT_MODELS"):
        policy.check_model("cli:opencode", "challenger")


def test_rounds_and_effort_ceilings_refuse_requests_and_lower_defaults() -> None:
    policy = _policy(DEBATE_CHAT_MAX_ROUNDS=2, DEBATE_CHAT_MAX_EFFORT="medium")
    assert policy.rounds(None, 4) == 2 and policy.rounds(1, 4) == 1 and policy.rounds(2, 2) == 2
    with pytest.raises(NotAllowed, match="DEBATE_CHAT_MAX_ROUNDS"):
        policy.rounds(3, 2)
    assert policy.effort(None, "max") == "medium" and policy.effort("low", "medium") == "low"
    with pytest.raises(NotAllowed, match="DEBATE_CHAT_MAX_EFFORT"):
        policy.effort("high", "low")
