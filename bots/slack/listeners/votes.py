"""Vote buttons on a verdict: one vote per person and debate, changeable; the tally is edited in.

A vote counts only on a finished debate visible from the channel the button was clicked in (the
log checks the Scope again when it records the vote) and held in that channel: a copied or forged
button on another debate is refused without naming it. A continued debate has a verdict message per
verdict, all with buttons: the one clicked is re-rendered with its own verdict (found by its key in the
log: `verdict`, `verdict:2`, …), never replaced by the latest.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bots.page import page_link
from bots.slack import blocks
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import channel_scope
from bots.slack.surface import SlackThread
from bots.thread import VERDICT, Paced, Urgency
from orchestrator.log import DebateLog, DebateRecord
from orchestrator.models import Verdict, Vote

log = logging.getLogger(__name__)
_render_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)


def describe(choice: str) -> str:
    if choice.startswith("side:"):
        return f"convinced by {choice.removeprefix('side:')}"
    return f"{choice} with the recommendation"


async def shown_verdict(store: DebateLog, record: DebateRecord, message_ts: str) -> Verdict | None:
    """The verdict the message `message_ts` shows: the first for `verdict`, the Nth for `verdict:N`."""
    verdicts = record.verdicts or ((record.verdict,) if record.verdict is not None else ())
    for key, message in (await store.messages(record.id)).items():
        name, _, number = key.partition(":")
        if message.message_id == message_ts and name == VERDICT and (number == "" or number.isdigit()):
            n = int(number or 1)
            return verdicts[n - 1] if 0 < n <= len(verdicts) else record.verdict
    return record.verdict


async def apply_vote(
    debate_id: str, choice: str, body: dict[str, Any], runtime: SlackRuntime,
    client: AsyncWebClient, respond: AsyncRespond,
) -> None:
    store = runtime.core.store
    team_id = (body.get("team") or {}).get("id")
    channel, ts = body["channel"]["id"], body["message"]["ts"]
    scope = channel_scope(team_id, channel, await runtime.privacy.is_private(client, team_id, channel))
    record = await store.get_debate(debate_id, scope, turns=False)  # a vote needs seats and verdict, not the turns
    valid = {"agree", "disagree"} | {f"side:{s.label}" for s in (record.seats if record else ())}
    if record is None or record.spec is None or record.verdict is None or choice not in valid \
            or record.channel != channel:
        await respond(text="That vote doesn't match a finished debate.", response_type="ephemeral",
                      replace_original=False)
        return
    vote = Vote(debate_id=record.id, user=body["user"]["id"], choice=choice, platform="slack")
    await store.record_vote(vote, scope)
    out = Paced(SlackThread(client, channel, None), runtime.pacers.for_workspace(team_id))
    async with _render_locks[f"{channel}:{ts}"]:  # the freshest tally wins, whatever the click order
        tally = await store.tally(record.id)
        fresh = await store.get_debate(record.id, scope, turns=False)
        finished = fresh is not None and fresh.finished_at is not None
        tokens = (fresh.input_tokens, fresh.output_tokens) if fresh is not None and finished else None
        shown = await shown_verdict(store, record, ts) or record.verdict
        page = await page_link(store, runtime.core.settings, record.id)
        message = blocks.verdict_message(record.spec, shown, tally, tokens, page)
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
