"""`/debate …`: ack at once, drop Slack's retries of a request already taken, then run it as a task.

A retry is dropped twice over: the log claims each request key once (any process, for a day), and a
debate is enqueued under the same key (`FrontFeed.enqueue`), so a request whose claim was lost cannot
start a second workflow while its first runs."""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.commands import (
    HELP_TEXT,
    CommandError,
    Config,
    Continue,
    Help,
    History,
    Interject,
    Models,
    Quote,
    Rematch,
    Search,
    Show,
    StartDebate,
    Stop,
    Usage,
    parse_command,
)
from bots.slack.blocks import safe
from bots.slack.listeners.invocation import Invocation
from bots.slack.listeners.loop import config_command, continue_command, interject_command, rematch_command
from bots.slack.listeners.quote import post_quote
from bots.slack.listeners.recall import search_debates, show_debate, show_history, show_models, stop_debate
from bots.slack.listeners.start import start_debate
from bots.slack.listeners.usage import show_usage
from bots.slack.runtime import SlackRuntime
from orchestrator.app import LOG_UNAVAILABLE
from orchestrator.log import LogUnavailableError, StoreError

log = logging.getLogger(__name__)

SOMETHING_WENT_WRONG = "Something went wrong on our side and that command did not run; please try again in a minute."


def request_key(command: dict[str, Any]) -> str:
    """trigger_id is unique per invocation and repeated on retries; without one, who said what where."""
    if command.get("trigger_id"):
        return f"trigger:{command['trigger_id']}"
    return ":".join(str(command.get(k, "")) for k in ("team_id", "channel_id", "user_id", "text"))


def retry_number(request: AsyncBoltRequest) -> int:
    values = request.headers.get("x-slack-retry-num") or ["0"]
    return int(values[0]) if values[0].isdigit() else 0


async def run_command(text: str, inv: Invocation) -> None:
    """Parse and run one command; every failure becomes one ephemeral line for the user."""
    try:
        command = parse_command(text)
        match command:
            case StartDebate():
                await start_debate(command, inv)
            case Help():
                await inv.tell(HELP_TEXT)
            case Models():
                await show_models(inv)
            case Usage():
                await show_usage(inv)
            case History():
                await show_history(command, inv)
            case Search():
                await search_debates(command, inv)
            case Show():
                await show_debate(command, inv)
            case Stop():
                await stop_debate(command, inv)
            case Quote():
                await post_quote(command.debate_id, inv)
            case Interject():
                await interject_command(command, inv)
            case Continue():
                await continue_command(command, inv)
            case Rematch():
                await rematch_command(command, inv)
            case Config():
                await config_command(command, inv)
    except (CommandError, StoreError) as exc:
        await inv.tell(safe(str(exc)))  # errors can quote the user's words: shown as text, cut to fit
    except LogUnavailableError as exc:
        log.warning("slack: /debate %r failed: %s", text[:80], exc)
        await inv.tell(LOG_UNAVAILABLE)
    except SlackApiError as exc:
        log.warning("slack: /debate %r failed: %s", text[:80], exc.response.get("error"))
        await inv.tell(f"Slack refused a request (`{exc.response.get('error')}`); please try again.")
    except Exception as exc:  # a bug of ours: the log keeps the traceback, the user still gets an answer
        log.error("slack: /debate %r failed with %s", text[:80], type(exc).__name__, exc_info=exc)
        await inv.tell(SOMETHING_WENT_WRONG)


async def debate_command(
    ack: AsyncAck, command: dict[str, Any], request: AsyncBoltRequest, runtime: SlackRuntime,
    client: AsyncWebClient, respond: AsyncRespond, context: dict[str, Any],
) -> None:
    await ack()
    if not context.get("answered"):  # answered by the route already (routes.py), which timed it
        runtime.record_ack(time.monotonic() - context.get("received_at", time.monotonic()))
    inv = Invocation(runtime=runtime, client=client, respond=respond, team_id=command.get("team_id"),
                     channel_id=command["channel_id"], user_id=command["user_id"],
                     request_key="slack:" + request_key(command))
    # spawned before any await, so `runtime.idle()` sees the work as soon as the ack is out
    runtime.spawn(run_once(command, retry_number(request), inv), name="slack-command")


async def run_once(command: dict[str, Any], retry: int, inv: Invocation) -> None:
    """Run the command unless this request was seen before (Slack retries; another process took it). A
    claim the log could not take is answered too: the user is never left without a word."""
    try:
        claimed = await inv.runtime.core.claim_request(inv.request_key or "slack:" + request_key(command))
    except Exception as exc:
        log.error("slack: could not claim /debate from %s: %s", command.get("user_id"), exc,
                  exc_info=not isinstance(exc, LogUnavailableError))
        await inv.tell(LOG_UNAVAILABLE if isinstance(exc, LogUnavailableError | StoreError) else SOMETHING_WENT_WRONG)
        return
    if not claimed:
        log.info("slack: dropped retry %d of /debate from %s", retry, command.get("user_id"))
        return
    await run_command(str(command.get("text", "")), inv)
