"""A model server that is not running reads as such: "could not connect … is the server running?", not
as a timeout. A real `debate run` subprocess, the real SDKs, a port where nothing listens."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from orchestrator.providers import provider_spec
from orchestrator.providers.anthropic_api import AnthropicProvider
from orchestrator.providers.base import ProviderError, ProviderTimeout
from tests.cli_harness import clean_env, debate
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.providers_anthropic_harness import call


def closed_port() -> int:
    """A port that was free a moment ago and has no listener now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
async def test_a_refused_connection_says_the_server_is_not_running(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    env = clean_env(tmp_path, OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=f"{base}/v1",
                    DEBATE_PROPOSER="openai:local-a", DEBATE_CHALLENGER="openai:local-b", DEBATE_JUDGE="openai:local-c")
    code, out, err = await debate(tmp_path, "run", "Should we self-host our models?", env=env)
    assert code == 1
    assert f"could not connect to {base} (connection refused): is the server running?" in out + err, out + err
    assert "timed out" not in out + err
    assert "Traceback" not in err


async def test_both_sdks_say_refused_not_timed_out() -> None:
    """The provider layer on its own, for the anthropic SDK too (its aiohttp transport also reports a
    refused connection as a connect timeout)."""
    base = f"http://127.0.0.1:{closed_port()}"
    provider = AnthropicProvider(provider_spec("anthropic"), api_key="sk-ant-test-key-123456", base_url=base,
                                 max_retries=0)
    with pytest.raises(ProviderError) as info:
        await provider.complete(call())
    await provider.aclose()
    assert not isinstance(info.value, ProviderTimeout)
    assert str(info.value).endswith(f"could not connect to {base} (connection refused): is the server running?")


@pytest.mark.slow
async def test_the_slack_thread_says_the_server_is_not_running(tmp_path: Path) -> None:
    """The same words reach the debate's thread: through bolt's dispatch, the Slack peer, the real SDKs."""
    base = f"http://127.0.0.1:{closed_port()}"
    async with SlackAPIPeer() as peer:
        settings = slack_settings(str(tmp_path / "d.db"), peer, f"{base}/v1", base)
        async with SlackBot(settings) as bot:
            status, _ = await bot.command("Should we self-host our models?", peer)
            await bot.settle()
    posted = " ".join(f"{m.text} {json.dumps(m.blocks or [])}" for m in peer.messages.values())
    assert status == 200
    assert "could not connect to http://127.0.0.1:" in posted and "is the server running?" in posted, posted[-2000:]
