"""Vote buttons on a verdict: one vote per person and debate, changeable; the tally is edited in."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack import blocks
from bots.slack.pacing import Urgency
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import visible
from bots.slack.writer import SlackThreadWriter
from orchestrator.models import Vote

log = logging.getLogger(__name__)
_render_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)


def describe(choice: str) -> str:
    if choice.startswith("side:"):
        return f"convinced by {choice.removeprefix('side:')}"
    return f"{choice} with the recommendation"


async def apply_vote(
    debate_id: str, choice: str, body: dict[str, Any], runtime: SlackRuntime,
    client: AsyncWebClient, respond: AsyncRespond,
) -> None:
    store = runtime.core.store
    team_id = (body.get("team") or {}).get("id")
    record = await store.get_debate(debate_id)
    valid = {"agree", "disagree"} | {f"side:{s.label}" for s in (record.seats if record else ())}
    if record is None or record.spec is None or record.verdict is None or choice not in valid \
            or not await visible(store, debate_id, team_id, runtime.multi_workspace):
        await respond(text="That vote doesn't match a finished debate.", response_type="ephemeral",
                      replace_original=False)
        return
    await store.record_vote(Vote(debate_id=debate_id, user=body["user"]["id"], choice=choice, platform="slack"))
    channel, ts = body["channel"]["id"], body["message"]["ts"]
    writer = SlackThreadWriter(client, channel, None, runtime.pacers.for_team(team_id), Urgency.USER)
    async with _render_locks[f"{channel}:{ts}"]:  # the freshest tally wins, whatever the click order
        tally = await store.tally(debate_id)
        fresh = await store.get_debate(debate_id)
        finished = fresh is not None and fresh.finished_at is not None
        tokens = (fresh.input_tokens, fresh.output_tokens) if fresh is not None and finished else None
        text, verdict_blocks = blocks.verdict_message(record.spec, record.verdict, tally, tokens)
        await writer.edit(ts, text, verdict_blocks)
    await respond(text=f"Your vote: {describe(choice)}. Click another button to change it.",
                  response_type="ephemeral", replace_original=False)


async def vote_button(
    ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], runtime: SlackRuntime,
    client: AsyncWebClient, respond: AsyncRespond,
) -> None:
    await ack()
    debate_id, _, choice = str(action.get("value", "")).partition("|")
    runtime.spawn(apply_vote(debate_id, choice, body, runtime, client, respond), f"slack-vote-{debate_id}")
