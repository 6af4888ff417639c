"""Quote a verdict's recommendation into the channel: Quote button, message shortcut, `/debate quote`."""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.blocks import quote_text
from bots.slack.links import permalink
from bots.slack.listeners.invocation import Invocation
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import visible

log = logging.getLogger(__name__)
_BLOCK_ID = re.compile(r"^debate:([0-9a-f]{4,32}):")


async def post_quote(debate_id: str, inv: Invocation) -> None:
    store = inv.runtime.core.store
    record = await store.get_debate(debate_id)
    if record is None or not await visible(store, record.id, inv.team_id, inv.runtime.multi_workspace):
        await inv.tell(f"No debate with id `{debate_id}`.")
        return
    if record.verdict is None or record.spec is None:
        await inv.tell(f"Debate `{record.id}` has no verdict yet; quote it once the judge has spoken.")
        return
    link = await permalink(inv.client, record.channel, record.thread) if record.platform == "slack" else None
    try:
        await inv.announce(quote_text(record.spec, record.verdict, link))
    except SlackApiError as exc:
        await inv.tell(f"I couldn't post the quote here (Slack said `{exc.response.get('error')}`).")


def _invocation(
    body: dict[str, Any], runtime: SlackRuntime, client: AsyncWebClient, respond: AsyncRespond
) -> Invocation:
    return Invocation(runtime=runtime, client=client, respond=respond, team_id=(body.get("team") or {}).get("id"),
                      channel_id=body["channel"]["id"], user_id=body["user"]["id"])


async def debate_id_of(message: dict[str, Any], runtime: SlackRuntime, channel: str) -> str | None:
    """The debate a message belongs to: from our block ids, else from the thread it sits in."""
    for block in message.get("blocks") or []:
        match = _BLOCK_ID.match(str(block.get("block_id", "")))
        if match:
            return match.group(1)
    thread = message.get("thread_ts") or message.get("ts")
    for summary in await runtime.core.store.history(200, platform="slack", channel=channel):
        if summary.thread == thread:
            return summary.id
    return None


async def quote_button(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], runtime: SlackRuntime,
    client: AsyncWebClient, respond: AsyncRespond,
) -> None:
    await ack()
    runtime.spawn(post_quote(str(action["value"]), _invocation(body, runtime, client, respond)), "slack-quote")


async def quote_shortcut(
    ack: AsyncAck, body: dict[str, Any], runtime: SlackRuntime, client: AsyncWebClient, respond: AsyncRespond
) -> None:
    await ack()
    inv = _invocation(body, runtime, client, respond)

    async def run() -> None:
        debate_id = await debate_id_of(body.get("message") or {}, runtime, inv.channel_id)
        if debate_id is None:
            await inv.tell("That message isn't part of a debate. Use the shortcut on a debate's verdict or thread.")
            return
        await post_quote(debate_id, inv)

    runtime.spawn(run(), "slack-quote-shortcut")
