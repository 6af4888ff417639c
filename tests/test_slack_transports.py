"""Socket Mode against the peer's websocket (with a reconnect and the process's /healthz), and the
multi-workspace OAuth install on either installation store."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import parse_qsl

import aiohttp
import pytest

from bots.slack.oauth import install_db_path
from bots.slack.serve import run_slack
from bots.slack.surface import slack_limits
from bots.web import WebFront, health_for
from orchestrator.app import Core
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings, slash_body
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend
from tests.slack_transports_harness import forgotten, install, installations, uninstall

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


def envelope(envelope_id: str, text: str, peer: SlackAPIPeer, trigger: str, retry: int | None = None) -> dict:
    payload = dict(parse_qsl(slash_body(text, trigger=trigger, response_url=peer.response_url())))
    message = {"envelope_id": envelope_id, "type": "slash_commands", "accepts_response_payload": True,
               "payload": payload}
    if retry is not None:
        message |= {"retry_attempt": retry, "retry_reason": "timeout"}
    return message


async def test_socket_mode_takes_commands_survives_a_drop_and_drops_retries(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  SLACK_APP_TOKEN="xapp-test-token")
        core = await Core.open(settings)
        stop = asyncio.Event()
        runtimes: list = []
        front = WebFront(health_for(lambda: 0, slack=True, discord=False))
        async with front.listen("127.0.0.1", 0) as port, aiohttp.ClientSession() as http:
            serving = asyncio.create_task(run_slack(core, "127.0.0.1", 0, stop, runtime_ready=runtimes.append,
                                                    front=front))
            try:
                await peer.socket_send(envelope("e1", "help", peer, "t1"))
                await peer.wait_for(lambda p: any(a.get("envelope_id") == "e1" for a in p.socket_acks))
                await peer.wait_for(lambda p: any("/debate <topic>" in c.params.get("text", "")
                                                  for c in p.of("response_url")))
                # Socket Mode opens no Slack route, but the process still answers its health check
                async with http.get(f"http://127.0.0.1:{port}/healthz") as health:
                    assert (health.status, await health.json()) == (
                        200, {"ok": True, "platforms": {"slack": "up"}, "debates_running": 0})
                async with http.post(f"http://127.0.0.1:{port}/slack/events", data="{") as events:
                    assert events.status == 404
                await socket_mode_survives_a_drop_and_drops_retries(peer, core, runtimes)
            finally:
                stop.set()
                await serving
                await core.close()


async def socket_mode_survives_a_drop_and_drops_retries(peer: SlackAPIPeer, core: Core, runtimes: list) -> None:
    await peer.drop_sockets()  # Slack closes connections now and then; the client must come back
    await peer.wait_for(lambda p: len(p.of("socket.connect")) >= 2 and p.socket_connections)

    await peer.socket_send(envelope("e2", "Event sourcing for billing? --rounds 1", peer, "t2"))
    await peer.socket_send(envelope("e3", "Event sourcing for billing? --rounds 1", peer, "t2", retry=1))
    await peer.wait_for(lambda p: {"e2", "e3"} <= {a.get("envelope_id") for a in p.socket_acks})
    await runtimes[0].idle()
    assert len(await core.store.history(5)) == 1
    assert len(peer.of("apps.connections.open")) >= 2


async def test_oauth_install_then_commands_use_the_installed_token_and_uninstall_forgets(
    tmp_path: Path, log_backend: LogBackend
) -> None:
    """On either store: the SQLite file beside DEBATE_DB, or DEBATE_DATABASE_URL's Postgres (and then
    no file at all)."""
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  SLACK_BOT_TOKEN=None, SLACK_CLIENT_ID="111.222", SLACK_CLIENT_SECRET="shh-secret",
                                  **log_backend.env)
        async with SlackBot(settings, slack_limits(post_interval=0.02, updates=1000, window=1.0)) as bot:
            status, page = await install(bot)
            assert status == 200, page
            store = installations(bot)
            installation = await store.async_find_installation(enterprise_id=None, team_id="T9")
            assert installation is not None and installation.bot_token == "xoxb-installed"
            assert install_db_path(settings).exists() == (log_backend.name == "sqlite")

            await bot.command("help", peer, team="T9")
            await bot.command("Feature flags or branches? --rounds 1", peer, team="T9", channel="C7")
            await bot.settle()
            posts = peer.of("chat.postMessage")
            assert posts and {c.params["token"] for c in posts} == {"xoxb-installed"}
            assert (await bot.core.store.history(5))[0].status == "completed"

            await uninstall(bot, "T9")
            assert await forgotten(bot, "T9")
