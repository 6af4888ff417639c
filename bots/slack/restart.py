"""After a restart: the root message of every Slack debate it cut off shows how it ended.

`Core.open` fails the debates a restart left "running" (`core.interrupted`); without this their root
messages would say "running" forever. Each is edited once, paced like any other write, to the final
state the sink shows for a failed debate. Best effort: a message that is gone, a channel the bot
left or a workspace that uninstalled it is logged and skipped.
"""

from __future__ import annotations

import asyncio
import logging

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack import blocks
from bots.slack.app import web_client
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import TEAM_KEY
from bots.slack.sink import PLATFORM
from bots.slack.writer import SlackThreadWriter

log = logging.getLogger(__name__)


async def announce_interrupted(app: AsyncApp, runtime: SlackRuntime) -> None:
    """Edit the root message of every Slack debate in `core.interrupted`; never raises."""
    await asyncio.gather(*(_announce_guarded(app, runtime, debate_id) for debate_id in runtime.core.interrupted))


async def _announce_guarded(app: AsyncApp, runtime: SlackRuntime, debate_id: str) -> None:
    try:
        await _announce(app, runtime, debate_id)
    except SlackApiError as exc:
        log.warning("slack: could not mark interrupted debate %s on its root message: %s", debate_id,
                    exc.response.get("error"))
    except Exception:
        log.warning("slack: could not mark interrupted debate %s on its root message", debate_id, exc_info=True)


async def _announce(app: AsyncApp, runtime: SlackRuntime, debate_id: str) -> None:
    core = runtime.core
    record = await core.store.get_debate(debate_id)
    if record is None or record.platform != PLATFORM:
        return
    root_ts = await core.store.get_message(debate_id, "root")
    if root_ts is None or record.channel is None or record.spec is None:
        log.info("slack: interrupted debate %s has no root message to update", debate_id)
        return
    team = await core.store.get_message(debate_id, TEAM_KEY)
    client = await _client_for(app, runtime, team)
    if client is None:
        log.info("slack: no installation for team %s; interrupted debate %s keeps its root message", team, debate_id)
        return
    outcome = await core.interrupted_outcome(record)
    text, root_blocks = blocks.final_root(record.spec, outcome, record.verdict)
    writer = SlackThreadWriter(client, record.channel, None, runtime.pacers.for_team(team))
    await writer.edit(root_ts, text, root_blocks)
    log.info("slack: marked debate %s as interrupted on its root message", debate_id)


async def _client_for(app: AsyncApp, runtime: SlackRuntime, team: str | None) -> AsyncWebClient | None:
    """The app's bot-token client in token mode; with several workspaces, one with the team's bot token."""
    if not runtime.multi_workspace:
        return app.client
    installations = app.installation_store
    if installations is None or team is None:
        return None
    bot = await installations.async_find_bot(enterprise_id=None, team_id=team)
    if bot is None or not bot.bot_token:
        return None
    return web_client(runtime.core.settings, bot.bot_token)
