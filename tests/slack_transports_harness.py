"""What test_slack_transports.py shares with other test modules, moved here so that no test module imports another:
`forgotten`, `install`, `installations`, `uninstall`."""

from __future__ import annotations

import asyncio
import json
import re

from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore

from tests.fakes.slack_api import SlackBot


async def install(at: SlackBot, redirected_to: SlackBot | None = None) -> tuple[int, str]:
    """The OAuth install as a browser drives it: /slack/install at `at` (a state, and its cookie), then
    Slack's redirect back with a code, landing at `redirected_to` (another front behind the same load
    balancer) or at `at` itself. The redirect's status and page."""
    async with at.http.get(f"{at.url}/slack/install") as page:
        assert page.status == 200
        state = re.search(r"state=([\w-]+)", await page.text())
        cookie = page.headers["Set-Cookie"].split(";")[0]  # Secure: a browser sends it back on https
    assert state is not None
    landing = redirected_to or at
    async with landing.http.get(f"{landing.url}/slack/oauth_redirect", headers={"Cookie": cookie},
                                params={"code": "good-code", "state": state.group(1)}) as done:
        return done.status, await done.text()


def installations(bot: SlackBot) -> AsyncInstallationStore:
    store = bot.app.installation_store
    assert store is not None
    return store


async def uninstall(bot: SlackBot, team: str) -> None:
    uninstalled = {"token": "legacy", "team_id": team, "api_app_id": "A1", "type": "event_callback",
                   "event_id": f"Ev-{team}", "event_time": 1, "event": {"type": "app_uninstalled"}}
    status, _ = await bot.post(json.dumps(uninstalled), headers={"Content-Type": "application/json"})
    assert status == 200


async def forgotten(bot: SlackBot, team: str) -> bool:
    """Whether `bot`'s store has no installation of `team`, within a few seconds: bolt deletes it after
    the ack, in a task of its own that nothing here can await."""
    store = installations(bot)
    for _ in range(100):
        if await store.async_find_installation(enterprise_id=None, team_id=team) is None:
            return True
        await asyncio.sleep(0.05)
    return False
