"""Slack Enterprise Grid (issue 55), through bolt's real dispatch of signed requests against the Slack API peer:
one org-wide installation (`is_enterprise_install`, `enterprise_id`) serves `/debate` from two workspaces of
the org with its one token; each workspace (`team_id`) sees only its own recall, even from a channel id the
other also has; and the org's uninstall deletes the installation and purges every workspace of it."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import pytest
from slack_sdk.oauth.installation_store import Installation

from bots.slack.surface import slack_limits
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings, slash_body
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

ORG = "E0ORG1"
LIMITS = slack_limits(post_interval=0.02, updates=1000, window=1.0)


def org_command(text: str, peer: SlackAPIPeer, team: str, key: str) -> str:
    """A slash command from `team`, a workspace of the org whose app is installed org-wide."""
    fields = dict(parse_qsl(slash_body(text, team=team, channel="C1", user=f"U{team}",
                                       response_url=peer.response_url(key))))
    return urlencode(fields | {"enterprise_id": ORG, "enterprise_name": "Org", "is_enterprise_install": "true"})


def answers(peer: SlackAPIPeer, key: str) -> str:
    return "\n".join(c.params.get("text", "") for c in peer.of("response_url") if c.params.get("key") == key)


async def test_an_org_wide_install_serves_each_workspace_its_own_recall_and_its_uninstall_purges_them_all(
    tmp_path: Path, log_backend: LogBackend
) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  SLACK_BOT_TOKEN=None, SLACK_CLIENT_ID="111.222", SLACK_CLIENT_SECRET="shh-secret",
                                  **log_backend.env)
        async with SlackBot(settings, LIMITS) as bot:
            store = bot.app.installation_store
            assert store is not None
            await store.async_save(Installation(
                app_id="A1", enterprise_id=ORG, team_id=None, is_enterprise_install=True, bot_token="xoxb-org",
                bot_id="BORG", bot_user_id="UBOT", bot_scopes="commands,chat:write", user_id="UADMIN"))

            for team, topic in (("T1", "Walrus migration for team one? --rounds 1"),
                                ("T2", "Narwhal migration for team two? --rounds 1")):
                status, _ = await bot.post(org_command(topic, peer, team, f"start-{team}"))
                assert status == 200
            await bot.settle()
            debates = await bot.core.store.history(10)
            assert {(d.workspace, d.status) for d in debates} == {("T1", "completed"), ("T2", "completed")}
            posts = peer.of("chat.postMessage")
            assert posts and {c.params["token"] for c in posts} == {"xoxb-org"}, "the one org-wide installation"
            assert len([c for c in posts if c.params.get("thread_ts")]) >= 2, "each thread reached with it too"

            for team in ("T1", "T2"):
                await bot.post(org_command("history", peer, team, f"history-{team}"))
                await bot.post(org_command("search migration", peer, team, f"search-{team}"))
            await bot.settle()
            for team, mine, theirs in (("T1", "Walrus", "Narwhal"), ("T2", "Narwhal", "Walrus")):
                for asked in (f"history-{team}", f"search-{team}"):
                    said = answers(peer, asked)
                    assert mine in said and theirs not in said, (asked, said)

            uninstalled = {"token": "legacy", "enterprise_id": ORG, "is_enterprise_install": True,
                           "api_app_id": "A1", "type": "event_callback", "event_id": "Ev-org", "event_time": 1,
                           "event": {"type": "app_uninstalled"}}
            status, _ = await bot.post(json.dumps(uninstalled), headers={"Content-Type": "application/json"})
            assert status == 200
            assert await store.async_find_bot(enterprise_id=ORG, team_id=None, is_enterprise_install=True) is None
            await bot.settle()
            assert await bot.core.store.history(10) == [], "every workspace of the org is purged"
            assert {e.workspace for e in await bot.core.store.audit(0.0) if e.action == "uninstall"} == {"T1", "T2"}
