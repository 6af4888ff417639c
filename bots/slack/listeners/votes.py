"""Vote buttons on a verdict: what Slack adds to the one vote path (`bots.thread.vote`) is the click's
fields and the edit of the clicked message with `SlackThread.verdict` (blocks.verdict_message).

Clicks on one message are rendered one at a time, each with the tally as it is then, so the freshest
tally wins whatever the order the clicks came in.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bots.commands import CommandError
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import channel_scope
from bots.slack.surface import PLATFORM, SlackThread
from bots.thread import Paced, Urgency
from bots.thread.vote import cast_vote, describe

log = logging.getLogger(__name__)
_render_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)


async def apply_vote(
    debate_id: str, choice: str, body: dict[str, Any], runtime: SlackRuntime,
    client: AsyncWebClient, respond: AsyncRespond,
) -> None:
    team_id = (body.get("team") or {}).get("id")
    channel, ts = body["channel"]["id"], body["message"]["ts"]
    scope = channel_scope(team_id, channel, await runtime.privacy.is_private(client, team_id, channel))
    surface = SlackThread(client, channel, None)
    async with _render_locks[f"{channel}:{ts}"]:  # the freshest tally wins, whatever the click order
        try:
            shown = await cast_vote(runtime.core, debate_id=debate_id, choice=choice, user=body["user"]["id"],
                                    platform=PLATFORM, scope=scope, where=channel, message_id=ts)
        except CommandError as exc:
            await respond(text=str(exc), response_type="ephemeral", replace_original=False)
            return
        message = surface.verdict(shown.spec, shown.verdict, shown.tally, shown.outcome)
        out = Paced(surface, runtime.pacers.for_workspace(team_id))
        await out.edit(ts, lambda: message, Urgency.USER, in_thread=False)
    await respond(text=f"Your vote: {describe(choice)}. Click another button to change it.",
                  response_type="ephemeral", replace_original=False)


async def vote_button(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], runtime: SlackRuntime,
    client: AsyncWebClient, respond: AsyncRespond,
) -> None:
    await ack()
    debate_id, _, choice = str(action.get("value", "")).partition("|")
    runtime.spawn(apply_vote(debate_id, choice, body, runtime, client, respond), f"slack-vote-{debate_id}")
