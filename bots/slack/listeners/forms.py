"""The Interject button on a running debate's root and the Continue button on a verdict: each opens a
modal (views.open with the click's trigger_id), whose submission runs the same rules as the command.

A submission is answered in the modal: a refusal (not running, interjections off, too many notes, no
verdict yet …) shows under the input (`response_action: errors`) and the modal stays open; success
closes it and an ephemeral message says what happens next. Slack waits 3 s for that answer, so the work
gets `ACK_BUDGET_S`; past it the modal closes and the outcome, either way, comes as an ephemeral message.
The debate must be visible from the channel the button was clicked in (the modal carries that channel).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.commands import CommandError
from bots.loop import interject, start_continuation
from bots.slack.blocks import safe
from bots.slack.listeners.loop import asker_of, continuing, noted
from bots.slack.listeners.recall import not_found
from bots.slack.modals import FACTS_BLOCK, NOTE_BLOCK, about, continue_modal, interject_modal, submitted
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import channel_scope
from orchestrator.log import StoreError

log = logging.getLogger(__name__)

ACK_BUDGET_S = 2.0  # of Slack's 3 s for answering a submission
ERROR_LIMIT = 300


async def _ephemeral(client: AsyncWebClient, channel: str, user: str, text: str) -> None:
    try:
        await client.chat_postEphemeral(channel=channel, user=user, text=safe(text, 2000))
    except SlackApiError as exc:
        log.info("slack: no ephemeral answer in %s: %s", channel, exc.response.get("error"))


async def _open(body: dict[str, Any], action: dict[str, Any], runtime: SlackRuntime, client: AsyncWebClient,
                respond: AsyncRespond, *, running: bool) -> None:
    """Open the button's modal for its debate, when that debate is visible here (and running, if asked)."""
    team, channel = (body.get("team") or {}).get("id"), body["channel"]["id"]
    scope = channel_scope(team, channel, await runtime.privacy.is_private(client, team, channel))
    debate_id = str(action.get("value", ""))
    record = await runtime.core.debate(debate_id, scope, turns=False)
    problem = not_found(debate_id) if record is None else None
    if record is not None and running and record.status != "running":
        problem = f"Debate `{record.id}` is not running any more; a note now would reach no one."
    if record is None or problem:
        await respond(text=problem, response_type="ephemeral", replace_original=False)
        return
    make = interject_modal if running else continue_modal
    try:
        await client.views_open(trigger_id=body["trigger_id"], view=make(record.id, record.topic, channel))
    except SlackApiError as exc:
        log.info("slack: views.open for %s failed: %s", record.id, exc.response.get("error"))
        await respond(text=f"I couldn't open the form (Slack said `{exc.response.get('error')}`); please try again.",
                      response_type="ephemeral", replace_original=False)


async def interject_button(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], runtime: SlackRuntime,
                           client: AsyncWebClient, respond: AsyncRespond) -> None:
    await ack()
    runtime.spawn(_open(body, action, runtime, client, respond, running=True), "slack-interject-form")


async def continue_button(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], runtime: SlackRuntime,
                          client: AsyncWebClient, respond: AsyncRespond) -> None:
    await ack()
    runtime.spawn(_open(body, action, runtime, client, respond, running=False), "slack-continue-form")


async def _outcome(work: Awaitable[str]) -> tuple[bool, str]:
    try:
        return True, await work
    except (CommandError, StoreError) as exc:
        return False, str(exc)
    except SlackApiError as exc:
        return False, f"Slack refused a request (`{exc.response.get('error')}`); please try again."


async def _answer(ack: AsyncAck, body: dict[str, Any], runtime: SlackRuntime, client: AsyncWebClient,
                  block_id: str, work: Awaitable[str], name: str) -> None:
    """Run the submission's work; its refusal goes under the input, its success to the user's channel."""
    _, channel = about(body["view"])
    user = body["user"]["id"]
    task = runtime.spawn(_outcome(work), name)
    done, _ = await asyncio.wait({task}, timeout=ACK_BUDGET_S)
    if task in done and not task.cancelled() and task.exception() is None:
        ok, text = task.result()
        if not ok:
            await ack(response_action="errors", errors={block_id: safe(text, ERROR_LIMIT)})
            return
        await ack()
        runtime.spawn(_ephemeral(client, channel, user, text), f"{name}-answer")
        return
    await ack()  # too slow for the modal (or it failed: logged by the runtime): the answer follows as a message

    async def later() -> None:
        results = await asyncio.gather(task, return_exceptions=True)
        text = results[0][1] if isinstance(results[0], tuple) else "Something went wrong; please try again."
        await _ephemeral(client, channel, user, text)

    runtime.spawn(later(), f"{name}-late-answer")


async def interject_submitted(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], runtime: SlackRuntime,
                              client: AsyncWebClient) -> None:
    debate_id, channel = about(view)

    async def work() -> str:
        team = (body.get("team") or {}).get("id")
        asker = await asker_of(runtime, client, team, channel, body["user"]["id"])
        note = await interject(runtime.core, debate_id, submitted(view, NOTE_BLOCK) or "", asker)
        return noted(note.debate_id)

    await _answer(ack, body, runtime, client, NOTE_BLOCK, work(), "slack-interject")


async def continue_submitted(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], runtime: SlackRuntime,
                             client: AsyncWebClient) -> None:
    debate_id, channel = about(view)

    async def work() -> str:
        team = (body.get("team") or {}).get("id")
        asker = await asker_of(runtime, client, team, channel, body["user"]["id"])
        await start_continuation(runtime.core, runtime.tailer, debate_id, submitted(view, FACTS_BLOCK), asker,
                                 f"slack:view:{view.get('id', '')}")
        return continuing(debate_id)

    await _answer(ack, body, runtime, client, FACTS_BLOCK, work(), "slack-continue")
