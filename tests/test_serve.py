"""`debate serve` as an operator runs it: one subprocess serving Slack (HTTP mode) and Discord at once,
configured only through the environment names in CONTRACT.md, against the loopback peers."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest
import sqlite_utils

from tests.cli_harness import clean_env
from tests.fakes.discord_api import CHANNEL_ID, TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SIGNING_SECRET, SlackAPIPeer, sign, slash_body
from tests.llm_scripts import script_judge
from tests.serve_harness import discord_verdict_posted, free_port, health_until, slack_verdict_posted

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
async def test_serve_runs_slack_and_discord_in_one_process(tmp_path: Path) -> None:
    port = free_port()
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack, DiscordPeer() as discord:
        script_judge(llm, "A", recommendation="Ship the smaller change first.")
        # a model that echoes a configured key: no platform message may carry it
        llm.default = Reply(text="Evidence: the deploy uses sk-test-openai-key today. @everyone <!channel> agree.")
        env = clean_env(
            tmp_path,
            OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=llm.openai_base_url,
            ANTHROPIC_API_KEY="sk-ant-test-key-123456", ANTHROPIC_BASE_URL=llm.anthropic_base_url,
            SLACK_BOT_TOKEN="xoxb-test-token", SLACK_SIGNING_SECRET=SIGNING_SECRET,
            SLACK_API_BASE_URL=slack.base_url,
            DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=discord.api_base_url,
            DISCORD_GATEWAY_URL=discord.gateway_url, DEBATE_ROUNDS="1",
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
            cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        try:
            await health_until(f"http://127.0.0.1:{port}/healthz", proc, 200)
            await discord.wait_for(lambda: discord.identifies > 0, within=30)

            body = slash_body("Monorepo or polyrepo?", channel="C7", response_url=slack.response_url())
            headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SIGNING_SECRET, body)}
            async with aiohttp.ClientSession() as http:
                async with http.post(f"http://127.0.0.1:{port}/slack/events", data=body, headers=headers) as r:
                    assert r.status == 200
            await slack.wait_for(slack_verdict_posted, within=60)

            await discord.dispatch_interaction(discord.slash_command("debate", {"topic": "Tabs or spaces?"}))
            await discord.wait_for(lambda: discord_verdict_posted(discord), within=60)
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(proc.communicate(), 30)
        to_slack = json.dumps([c.params for c in slack.calls])
        to_discord = json.dumps([c.body for c in discord.calls])
    assert proc.returncode == 0, err.decode()[-2000:]
    for posted in (to_slack, to_discord):
        assert "[redacted]" in posted and "sk-test-openai-key" not in posted and "@everyone" not in posted
    assert "<!channel>" not in to_slack
    db = sqlite_utils.Database(tmp_path / "debates.db")
    rows = {r["platform"]: r for r in db["debates"].rows}
    assert set(rows) == {"slack", "discord"}
    assert all(r["status"] == "completed" for r in rows.values())
    assert rows["discord"]["channel"] == CHANNEL_ID or rows["discord"]["thread"]
    assert "sk-test-openai-key" not in err.decode() + out.decode()


@pytest.mark.slow
async def test_discord_only_serve_answers_healthz_and_says_when_the_gateway_is_down(tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(tmp_path, OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL="http://127.0.0.1:9/v1",
                    DISCORD_BOT_TOKEN=TOKEN)
    async with DiscordPeer() as discord:
        env |= {"DISCORD_API_BASE_URL": discord.api_base_url, "DISCORD_GATEWAY_URL": discord.gateway_url}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
            cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        try:
            healthy = await health_until(f"http://127.0.0.1:{port}/healthz", proc, 200)
            assert healthy == {"ok": True, "platforms": {"discord": "up"}, "debates_running": 0}
            assert discord.identifies == 1
        except BaseException:
            proc.kill()
            raise
    try:  # the peer is gone: the gateway cannot reconnect, and the health check must say so
        down = await health_until(f"http://127.0.0.1:{port}/healthz", proc, 503)
        assert down["ok"] is False and down["platforms"] == {"discord": "down"}
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()[-2000:]


def logs_in(folder: Path) -> list[Path]:
    return list(folder.glob("debates.db*"))


@pytest.mark.slow
async def test_serve_says_so_in_one_line_when_its_port_is_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = clean_env(tmp_path, OPENAI_API_KEY="sk-test-openai-key", DISCORD_BOT_TOKEN=TOKEN,
                        DISCORD_API_BASE_URL="http://127.0.0.1:9/api/v10", DISCORD_GATEWAY_URL="ws://127.0.0.1:9/")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
            cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2, err.decode()
    assert f"127.0.0.1:{port}" in err.decode() and "--port" in err.decode() and "Traceback" not in err.decode()
    assert not logs_in(tmp_path), "told before it opens the log and the workflow engine"


@pytest.mark.slow
async def test_serve_with_nothing_configured_says_what_to_set(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots.cli", "serve", cwd=tmp_path, env=clean_env(tmp_path),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2
    assert "SLACK_BOT_TOKEN" in err.decode() and "DISCORD_BOT_TOKEN" in err.decode()
    assert "Traceback" not in err.decode()


def test_env_example_lists_every_setting() -> None:
    from bots.settings import BotSettings as Settings

    example = (ROOT / ".env.example").read_text()
    names = {field.alias for field in Settings.model_fields.values()}
    missing = sorted(n for n in names if n and f"{n}=" not in example)
    assert not missing, f".env.example lacks {missing}"
    assert os.path.exists(ROOT / "deploy" / "slack-manifest.yml")
