"""Links to debate threads: chat.getPermalink, falling back to no link (callers then show ids)."""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from orchestrator.log import DebateSummary

log = logging.getLogger(__name__)


async def permalink(client: AsyncWebClient, channel: str | None, ts: str | None) -> str | None:
    if not channel or not ts:
        return None
    try:
        response = await client.chat_getPermalink(channel=channel, message_ts=ts)
    except SlackApiError as exc:
        log.info("slack: no permalink for %s/%s: %s", channel, ts, exc.response.get("error"))
        return None
    link = response.get("permalink")
    return str(link) if link else None


async def thread_links(client: AsyncWebClient, summaries: list[DebateSummary]) -> dict[str, str | None]:
    """Permalinks for the Slack debates among `summaries`, fetched together."""
    slack = [s for s in summaries if s.platform == "slack"]
    links = await asyncio.gather(*(permalink(client, s.channel, s.thread) for s in slack))
    return {s.id: link for s, link in zip(slack, links, strict=True)}
