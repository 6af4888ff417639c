"""Slack's `link_shared` → `chat.unfurl`: a debate page's link pasted in a channel shows the topic, the
winner, the confidence and the recommendation — only when the debate may be seen from that channel
(the same Scope as recall: a private channel's or a DM's debate only inside it) and the link's key is
right. Anything else is left as Slack shows it: no unfurl, nothing said. Links pasted in the message
composer (`source: composer`) are not unfurled: the channel they will land in is not known yet."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.page.keys import linked_debate
from bots.settings import bot_settings
from bots.slack import blocks
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import channel_scope
from orchestrator.log import DebateRecord

log = logging.getLogger(__name__)

MAX_UNFURLS = 5


def unfurl_blocks(record: DebateRecord) -> dict[str, Any]:
    parts = [blocks.section(f":speech_balloon: *{blocks.safe(record.topic, 500)}*")]
    verdict = record.verdict
    if verdict is None or record.spec is None:
        parts.append(blocks.context(f"{record.format} debate · {record.status}"))
    else:
        confidence = (" (the judging did not agree)" if verdict.no_clear_winner else
                      f" · {verdict.confidence} confidence" if verdict.confidence else "")
        split = " · split" if verdict.split else ""
        winner = blocks.winner_text(record.spec, verdict)
        parts.append(blocks.section(f":trophy: *Winner:* {winner}{confidence}{split}"))
        if verdict.recommendation:
            parts.append(blocks.section(f"*Recommendation:* {blocks.safe(verdict.recommendation, 1500)}"))
    return {"blocks": parts}


async def link_shared(event: dict[str, Any], body: dict[str, Any], client: AsyncWebClient,
                      context: dict[str, Any]) -> None:
    runtime: SlackRuntime = context["runtime"]
    core = runtime.core
    channel, ts = event.get("channel"), event.get("message_ts")
    if event.get("source") == "composer" or not isinstance(channel, str) or not isinstance(ts, str):
        return
    team_id = body.get("team_id")
    scope = channel_scope(team_id, channel, await runtime.privacy.is_private(client, team_id, channel))
    settings = bot_settings(core.settings)
    unfurls: dict[str, Any] = {}
    for link in (event.get("links") or [])[:MAX_UNFURLS]:
        url = link.get("url") if isinstance(link, dict) else None
        if isinstance(url, str) and (record := await linked_debate(core, settings, url, scope)):
            unfurls[url] = unfurl_blocks(record)
    if not unfurls:
        return
    try:
        await client.chat_unfurl(channel=channel, ts=ts, unfurls=unfurls)
    except SlackApiError as exc:
        log.info("slack: chat.unfurl refused: %s", exc.response.get("error"))


async def page_opened(ack: Any) -> None:
    """The page button is a link: Slack opens it and sends the click, which needs only an ack."""
    await ack()
