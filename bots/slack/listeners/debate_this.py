"""**Debate this**, the message shortcut (callback `debate_this`): a debate whose brief is the message
clicked, its files and its thread.

The click opens a modal asking for the topic, prefilled from the message's first line. Its submission
checks the topic like `/debate` does (a bad one shows under the input), closes, and starts the debate in
the message's channel through the one start path (bots/slack/listeners/start.py), reading the message, its
files (files.info and the bot token) and its thread (conversations.replies) into the brief
(bots/slack/files.py). What the user must know comes as an ephemeral message in that channel.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.commands import CommandError, start_request
from bots.settings import bot_settings
from bots.slack.blocks import safe
from bots.slack.files import SlackFiles, first_line, plain
from bots.slack.listeners.command import SOMETHING_WENT_WRONG
from bots.slack.listeners.invocation import Invocation
from bots.slack.listeners.start import start_debate
from bots.slack.modals import TOPIC_BLOCK, debate_this_about, debate_this_modal, submitted
from bots.slack.runtime import SlackRuntime
from orchestrator.log import StoreError

log = logging.getLogger(__name__)

DEBATE_THIS = "debate_this"
CANNOT_READ = ("I couldn't read that message or its thread, so nothing started. In a private channel, "
               "`/invite @debate-bot` first.")


class Ephemeral:
    """`respond` for a request that has no response_url (a modal's submission): an ephemeral message."""

    def __init__(self, client: AsyncWebClient, channel: str, user: str) -> None:
        self.client, self.channel, self.user = client, channel, user

    async def __call__(self, text: str = "", **_: Any) -> None:
        try:
            await self.client.chat_postEphemeral(channel=self.channel, user=self.user, text=safe(text, 2000))
        except SlackApiError as exc:
            log.info("slack: no ephemeral answer in %s: %s", self.channel, exc.response.get("error"))


async def debate_this_shortcut(ack: AsyncAck, shortcut: dict[str, Any], client: AsyncWebClient,
                               respond: AsyncRespond) -> None:
    await ack()
    message = shortcut.get("message") or {}
    channel = (shortcut.get("channel") or {}).get("id", "")
    view = debate_this_modal(first_line(plain(str(message.get("text") or ""))), channel, str(message.get("ts")),
                             message.get("thread_ts"))
    try:
        await client.views_open(trigger_id=shortcut["trigger_id"], view=view)
    except SlackApiError as exc:
        log.info("slack: views.open for Debate this failed: %s", exc.response.get("error"))
        await respond(text=f"I couldn't open the form (Slack said `{exc.response.get('error')}`); please try again.",
                      response_type="ephemeral", replace_original=False)


async def debate_this_submitted(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], runtime: SlackRuntime,
                                client: AsyncWebClient) -> None:
    topic = submitted(view, TOPIC_BLOCK) or ""
    try:
        command = start_request(topic)
    except CommandError as exc:
        await ack(response_action="errors", errors={TOPIC_BLOCK: safe(str(exc), 300)})
        return
    await ack()
    channel, ts, thread_ts = debate_this_about(view)
    team, user = (body.get("team") or {}).get("id"), body["user"]["id"]
    inv = Invocation(runtime=runtime, client=client, respond=cast(AsyncRespond, Ephemeral(client, channel, user)),
                     team_id=team, channel_id=channel, user_id=user,
                     request_key=f"slack:view:{view.get('id', '')}")
    runtime.spawn(_start(inv, command, ts, thread_ts), "slack-debate-this")


async def _start(inv: Invocation, command: Any, ts: str, thread_ts: str | None) -> None:
    try:
        if not await inv.runtime.core.claim_request(inv.request_key or ""):
            return  # a retried submission
        files = SlackFiles(inv.client, bot_settings(inv.runtime.core.settings).slack_api_base_url)
        materials = await files.message_materials(inv.channel_id, ts, thread_ts)
        if not materials:  # conversations.replies refused (not in the channel) or the message is gone
            await inv.tell(CANNOT_READ)
            return
        await start_debate(command, inv, materials)
    except (CommandError, StoreError) as exc:
        await inv.tell(str(exc))
    except SlackApiError as exc:
        await inv.tell(f"Slack refused a request (`{exc.response.get('error')}`); please try again.")
    except Exception as exc:  # a bug of ours: logged with its traceback, the user still hears back
        log.error("slack: Debate this failed with %s", type(exc).__name__, exc_info=exc)
        await inv.tell(SOMETHING_WENT_WRONG)
