"""App Home: the workspace's recent public-channel debates with outcome and tally; for admins, first,
the workspace's model spend this day and month against its budgets (bots/usage.py).

App Home is inside no channel, so it shows only what every member of the workspace may see: debates
held in its public channels (`home_scope`), never a private channel's or a DM's, whoever opens it.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.links import thread_links
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import home_scope
from bots.slack.views import HOME_LIMIT, home_view, usage_blocks
from bots.usage import usage_lines


async def publish_home(user_id: str, team_id: str | None, runtime: SlackRuntime, client: AsyncWebClient) -> None:
    core = runtime.core
    summaries = await core.history(HOME_LIMIT, home_scope(team_id))
    items = [(s, await core.tally(s.id) if s.votes else None) for s in summaries]
    view = home_view(items, await thread_links(client, summaries))
    if await runtime.users.is_admin(client, team_id, user_id):  # admins see the workspace's spend first
        view["blocks"] = [*usage_blocks(await usage_lines(core, "slack", team_id, user_id, admin=True)),
                          *view["blocks"]][:50]
    await client.views_publish(user_id=user_id, view=view)


async def home_opened(event: dict[str, Any], context: dict[str, Any], runtime: SlackRuntime,
                      client: AsyncWebClient) -> None:
    if event.get("tab", "home") != "home":
        return
    runtime.spawn(publish_home(event["user"], context.get("team_id"), runtime, client), "slack-home")
