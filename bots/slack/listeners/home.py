"""App Home: the workspace's recent debates with outcome and tally."""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.links import thread_links
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import visible_summaries
from bots.slack.views import HOME_LIMIT, home_view


async def publish_home(user_id: str, team_id: str | None, runtime: SlackRuntime, client: AsyncWebClient) -> None:
    store = runtime.core.store
    summaries = await store.history(HOME_LIMIT * 3 if runtime.multi_workspace else HOME_LIMIT, platform="slack")
    summaries = (await visible_summaries(store, summaries, team_id, runtime.multi_workspace))[:HOME_LIMIT]
    items = [(s, await store.tally(s.id) if s.votes else None) for s in summaries]
    await client.views_publish(user_id=user_id, view=home_view(items, await thread_links(client, summaries)))


async def home_opened(event: dict[str, Any], context: dict[str, Any], runtime: SlackRuntime,
                      client: AsyncWebClient) -> None:
    if event.get("tab", "home") != "home":
        return
    runtime.spawn(publish_home(event["user"], context.get("team_id"), runtime, client), "slack-home")
