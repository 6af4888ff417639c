"""The app removed from a Slack workspace (issue 55), through bolt's real dispatch of signed events against the
Slack API peer, on SQLite and Postgres: `app_uninstalled` (and `tokens_revoked` for the bot's token) deletes
the workspace's tokens before the event is answered, so its next command gets no answer that needs them;
stops its running debate; purges its data (another workspace's stays); and a reinstall within
DEBATE_UNINSTALL_GRACE_DAYS keeps the data, while without one the daily pass purges it after the grace."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from bots.slack.surface import slack_limits
from orchestrator.retention import DAY_S
from orchestrator.uninstall import purge_due
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend
from tests.purge_log_harness import NOON
from tests.purge_log_harness import debate as seed
from tests.slack_transports_harness import install, installations

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

LIMITS = slack_limits(post_interval=0.02, updates=1000, window=1.0)


def removal(team: str, event: dict[str, object], n: int = 1) -> str:
    return json.dumps({"token": "legacy", "team_id": team, "api_app_id": "A1", "type": "event_callback",
                       "event_id": f"Ev-{team}-{event['type']}-{n}", "event_time": 1, "event": event})


def settings_for(tmp_path: Path, peer: SlackAPIPeer, llm: FakeLLMServer, log_backend: LogBackend,
                 **extra: str) -> Any:
    return slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                          SLACK_BOT_TOKEN=None, SLACK_CLIENT_ID="111.222", SLACK_CLIENT_SECRET="shh-secret",
                          **log_backend.env, **extra)


def workspace_rows(log_backend: LogBackend, team: str) -> int:
    return int(log_backend.sql("select count(*) from debates where workspace = ?", [team])[0][0])


async def test_app_uninstalled_deletes_the_tokens_at_once_stops_and_purges_the_workspace(
    tmp_path: Path, log_backend: LogBackend
) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        gate = asyncio.Event()
        llm.add_rule(Reply(text="Holding the floor.", gate=gate))
        async with SlackBot(settings_for(tmp_path, peer, llm, log_backend), LIMITS) as bot:
            status, page = await install(bot)
            assert status == 200, page
            await seed(bot.core.store, "U5", NOON, workspace="T9", word="finished")
            other = await seed(bot.core.store, "U5", NOON, workspace="T1", word="elsewhere")
            await bot.command("Hold the floor? --rounds 1", peer, team="T9", channel="C7", user="U2")
            await llm.wait_for_requests(1)
            (running,) = bot.running()
            assert workspace_rows(log_backend, "T9") == 2

            status, _ = await bot.post(removal("T9", {"type": "app_uninstalled"}),
                                       headers={"Content-Type": "application/json"})
            assert status == 200
            store = installations(bot)
            assert await store.async_find_installation(enterprise_id=None, team_id="T9") is None, "at once"
            assert await store.async_find_bot(enterprise_id=None, team_id="T9") is None
            await bot.settle()
            gate.set()

            assert workspace_rows(log_backend, "T9") == 0, "the workspace's debates are purged"
            assert await bot.core.store.purged(running) is not None, "the running debate was stopped, then purged"
            assert await bot.core.store.get_debate(other) is not None, "another workspace's data stays"
            trail = [(e.action, e.who) for e in await bot.core.store.audit(0.0)]
            assert ("uninstall", "slack") in trail and ("purge", "slack") in trail

            calls = len(peer.calls)
            await bot.command("help", peer, team="T9", channel="C7")
            await bot.command("Is anyone there? --rounds 1", peer, team="T9", channel="C7")
            await bot.settle()
            tokens = [c.params.get("token") for c in peer.calls[calls:] if c.method != "response_url"]
            assert "xoxb-installed" not in tokens, "no call with the deleted token"
            assert workspace_rows(log_backend, "T9") == 0, "nothing started without an installation"


async def test_a_reinstall_within_the_grace_keeps_the_data_and_without_one_it_goes_after_it(
    tmp_path: Path, log_backend: LogBackend
) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        settings = settings_for(tmp_path, peer, llm, log_backend, DEBATE_UNINSTALL_GRACE_DAYS="2")
        async with SlackBot(settings, LIMITS) as bot:
            assert (await install(bot))[0] == 200
            store = bot.core.store
            kept = await seed(store, "U5", NOON, workspace="T9", word="kept")
            status, _ = await bot.post(removal("T9", {"type": "tokens_revoked", "tokens": {"bot": ["UBOT"]}}),
                                       headers={"Content-Type": "application/json"})
            assert status == 200
            assert await installations(bot).async_find_installation(enterprise_id=None, team_id="T9") is None
            await bot.settle()
            assert workspace_rows(log_backend, "T9") == 1, "kept through the grace"

            assert (await install(bot))[0] == 200  # back within the grace
            assert await purge_due(store, None, NOON + 100 * DAY_S) == []
            assert await store.get_debate(kept) is not None, "a reinstall keeps the data"
            assert next(e.detail for e in await store.audit(0.0) if e.action == "install").startswith("added back")

            status, _ = await bot.post(removal("T9", {"type": "app_uninstalled"}, 2),
                                       headers={"Content-Type": "application/json"})
            await bot.settle()
            assert workspace_rows(log_backend, "T9") == 1
            assert await purge_due(store, None, time.time() + DAY_S) == [], "not before the grace has passed"
            (report,) = await purge_due(store, None, time.time() + 2 * DAY_S + 60)
            assert report.purged == [kept] and workspace_rows(log_backend, "T9") == 0
