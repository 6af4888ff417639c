"""Every Slack listener, wired in one place; each lives in its own small module."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from bots.slack.blocks import CONTINUE_ACTION, INTERJECT_ACTION, PAGE_ACTION, QUOTE_ACTION, VOTE_ACTION
from bots.slack.listeners.command import debate_command
from bots.slack.listeners.debate_this import DEBATE_THIS, debate_this_shortcut, debate_this_submitted
from bots.slack.listeners.forms import continue_button, continue_submitted, interject_button, interject_submitted
from bots.slack.listeners.home import home_opened
from bots.slack.listeners.quote import quote_button, quote_shortcut
from bots.slack.listeners.unfurl import link_shared, page_opened
from bots.slack.listeners.uninstall import app_uninstalled, tokens_revoked
from bots.slack.listeners.votes import vote_button
from bots.slack.modals import CONTINUE_VIEW, DEBATE_THIS_VIEW, INTERJECT_VIEW
from bots.slack.runtime import SlackRuntime

log = logging.getLogger(__name__)


def _attach(runtime: SlackRuntime) -> Callable[..., Awaitable[None]]:
    async def attach_runtime(context: dict[str, Any], next_: Callable[[], Awaitable[None]]) -> None:
        context["runtime"] = runtime
        context["received_at"] = time.monotonic()
        await runtime.note_org(context.get("team_id"), context.get("enterprise_id"))
        await next_()

    return attach_runtime


async def _log_error(error: Exception, body: dict[str, Any]) -> None:
    log.error("slack: unhandled %s in a %s request", type(error).__name__, body.get("type") or "command",
              exc_info=error)


def register_listeners(app: AsyncApp, runtime: SlackRuntime) -> None:
    app.use(_attach(runtime))
    app.command("/debate")(debate_command)
    app.action(re.compile(f"^{VOTE_ACTION}_"))(vote_button)
    app.action(QUOTE_ACTION)(quote_button)
    app.shortcut(QUOTE_ACTION)(quote_shortcut)
    app.action(INTERJECT_ACTION)(interject_button)
    app.action(CONTINUE_ACTION)(continue_button)
    app.view_submission(INTERJECT_VIEW)(interject_submitted)
    app.view_submission(CONTINUE_VIEW)(continue_submitted)
    app.shortcut(DEBATE_THIS)(debate_this_shortcut)  # a debate over a message, its files and its thread
    app.view_submission(DEBATE_THIS_VIEW)(debate_this_submitted)
    app.event("app_home_opened")(home_opened)
    app.event("link_shared")(link_shared)  # a debate page's link unfurled where recall may show it
    app.action(PAGE_ACTION)(page_opened)
    app.event("app_uninstalled")(app_uninstalled)  # tokens deleted at once, then the workspace's data
    app.event("tokens_revoked")(tokens_revoked)
    app.error(_log_error)
