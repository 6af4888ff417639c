"""Quote a verdict's recommendation into the channel: Quote button, message shortcut, `/debate quote`.

A quote goes only into the debate's own channel (top level, with a link to its thread): asked from
any other channel it is refused, even for a public debate, so a recommendation never crosses into a
channel it was not made for. The debate must also be visible from where the quote is asked (the
invocation's Scope), so a forged button or a copied message names nothing it may not see.
"""

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
from bots.slack.listeners.recall import not_found
from bots.slack.runtime import SlackRuntime
from bots.slack.surface import PLATFORM
from orchestrator.log import Scope

log = logging.getLogger(__name__)
_BLOCK_ID = re.compile(r"^debate:([0-9a-f]{4,32}):")


async def post_quote(debate_id: str, inv: Invocation) -> None:
    record = await inv.runtime.core.debate(debate_id, await inv.scope(), turns=False)
    if record is None:
        await inv.tell(not_found(debate_id))
        return
    if record.channel != inv.channel_id:
        await inv.tell(f"A debate is quoted only in its own channel; run `/debate quote {record.id}` there.")
        return
    if record.verdict is None or record.spec is None:
        await inv.tell(f"Debate `{record.id}` has no verdict yet; quote it once the judge has spoken.")
        return
    link = await permalink(inv.client, record.channel, record.thread)
    try:
        await inv.announce(quote_text(record.spec, record.verdict, link))
    except SlackApiError as exc:
        await inv.tell(f"I couldn't post the quote here (Slack said `{exc.response.get('error')}`).")


def _invocation(
    body: dict[str, Any], runtime: SlackRuntime, client: AsyncWebClient, respond: AsyncRespond
) -> Invocation:
    return Invocation(runtime=runtime, client=client, respond=respond, team_id=(body.get("team") or {}).get("id"),
                      channel_id=body["channel"]["id"], user_id=body["user"]["id"])


async def debate_id_of(message: dict[str, Any], runtime: SlackRuntime, channel: str, scope: Scope) -> str | None:
    """The debate a message belongs to: from our block ids, else from the thread it sits in."""
    for block in message.get("blocks") or []:
        match = _BLOCK_ID.match(str(block.get("block_id", "")))
        if match:
            return match.group(1)
    thread = message.get("thread_ts") or message.get("ts")
    return None if thread is None else await runtime.core.debate_of_message(PLATFORM, channel, str(thread), scope)


async def quote_button(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], runtime: SlackRuntime,
    client: AsyncWebClient, respond: AsyncRespond,
) -> None:
    await ack()
    runtime.spawn(post_quote(str(action.get("value", "")), _invocation(body, runtime, client, respond)), "slack-quote")


async def quote_shortcut(
    ack: AsyncAck, body: dict[str, Any], runtime: SlackRuntime, client: AsyncWebClient, respond: AsyncRespond
) -> None:
    await ack()
    inv = _invocation(body, runtime, client, respond)

    async def run() -> None:
        debate_id = await debate_id_of(body.get("message") or {}, runtime, inv.channel_id, await inv.scope())
        if debate_id is None:
            await inv.tell("That message isn't part of a debate. Use the shortcut on a debate's verdict or thread.")
            return
        await post_quote(debate_id, inv)

    runtime.spawn(run(), "slack-quote-shortcut")
