"""`/debate interject | continue | rematch | config`: the team in the loop, from the slash command.

The rules are the shared service's (`bots.loop`): which debates take a note or go on, what a rematch
replays, what a channel setting may be. Here is only what is Slack's: who the asker is (display name
from users.info, the Scope of the channel asked from), who may change a channel's settings (a
workspace admin or owner, as for stopping someone else's debate), and the rematch's reply in the
original debate's thread. Answers are ephemeral; what everyone should see goes into the threads.
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.commands import Config, Continue, Interject, Rematch
from bots.loop import (
    Asker,
    channel_config,
    config_text,
    interject,
    rematch_request,
    rematch_shown_beside,
    set_channel_config,
    start_continuation,
)
from bots.slack.blocks import safe
from bots.slack.links import permalink
from bots.slack.listeners.invocation import Invocation
from bots.slack.listeners.recall import not_found
from bots.slack.listeners.start import start_debate
from bots.slack.runtime import SlackRuntime
from bots.slack.scope import channel_scope
from bots.slack.surface import PLATFORM
from bots.thread import Urgency
from orchestrator.log import DebateRecord

log = logging.getLogger(__name__)

ADMINS_ONLY = "Only a workspace admin or owner can change this channel's debate settings; `/debate config` shows them."


async def asker_of(runtime: SlackRuntime, client: AsyncWebClient, team_id: str | None, channel_id: str,
                   user_id: str) -> Asker:
    """The person asking from `channel_id`, as the shared rules need them: name to sign with, Scope."""
    private = await runtime.privacy.is_private(client, team_id, channel_id)
    return Asker(platform=PLATFORM, user=user_id, author=await runtime.users.name(client, team_id, user_id),
                 scope=channel_scope(team_id, channel_id, private))


def noted(debate_id: str) -> str:
    return (f"Your note for debate `{debate_id}` reaches both sides and the judge at the start of the next round, "
            "and shows in its thread then.")


def continuing(debate_id: str) -> str:
    return f"Debate `{debate_id}` goes on: one more round, then a new verdict, in its thread."


async def interject_command(command: Interject, inv: Invocation) -> None:
    asker = await asker_of(inv.runtime, inv.client, inv.team_id, inv.channel_id, inv.user_id)
    note = await interject(inv.runtime.core, command.debate_id, command.text, asker)
    await inv.tell(noted(note.debate_id))


async def continue_command(command: Continue, inv: Invocation) -> None:
    core = inv.runtime.core
    asker = await asker_of(inv.runtime, inv.client, inv.team_id, inv.channel_id, inv.user_id)
    record = await core.debate(command.debate_id, asker.scope, turns=False)
    if record is None:
        await inv.tell(not_found(command.debate_id))
        return
    await start_continuation(core, inv.runtime.tailer, record.id, command.facts, asker, inv.request_key)
    await inv.tell(continuing(record.id))


async def rematch_command(command: Rematch, inv: Invocation) -> None:
    original = await inv.runtime.core.debate(command.debate_id, await inv.scope(), turns=False)
    if original is None:
        await inv.tell(not_found(command.debate_id))
        return
    request = rematch_request(original, vs=command.vs, format=command.format)
    new_id = await start_debate(request, inv)
    if new_id is not None:
        await link_rematch(original, new_id, inv)


async def link_rematch(original: DebateRecord, new_id: str, inv: Invocation) -> None:
    """A short reply in the original debate's thread naming its rematch, where this bot can post there
    (a Slack debate of this workspace whose thread it reaches) and the rematch is at least as visible as
    the original (`rematch_shown_beside`); a refusal is logged, not shown."""
    if original.platform != PLATFORM or not original.channel or not original.thread:
        return
    if original.workspace is not None and original.workspace != inv.team_id:
        return
    rematch = await inv.runtime.core.debate(new_id, turns=False)
    if rematch is None or not rematch_shown_beside(rematch, original):
        return
    link = await permalink(inv.client, rematch.channel, rematch.thread)
    models = " vs ".join(f"`{safe(seat.model, 80)}`" for seat in rematch.seats)
    where = f"<{link}|its thread>" if link else "`/debate show " + new_id + "`"
    text = f":repeat: Rematch: debate `{new_id}` asks this again with {models} ({rematch.format}) — {where}."
    pacer = inv.runtime.pacers.for_workspace(inv.team_id)
    try:
        async with pacer.posting(original.channel, Urgency.USER):
            await inv.client.chat_postMessage(channel=original.channel, thread_ts=original.thread, text=text,
                                              unfurl_links=False, unfurl_media=False)
    except SlackApiError as exc:
        log.info("slack: no rematch reply in the thread of %s: %s", original.id, exc.response.get("error"))


async def config_command(command: Config, inv: Invocation) -> None:
    core = inv.runtime.core
    if not command.assignments:
        defaults = await channel_config(core, PLATFORM, inv.team_id, inv.channel_id)
        await inv.tell(safe(config_text(defaults, core.settings)))
        return
    if not await inv.runtime.users.is_admin(inv.client, inv.team_id, inv.user_id):
        await inv.tell(ADMINS_ONLY)
        return
    defaults = await set_channel_config(core, PLATFORM, inv.team_id, inv.channel_id, command.assignments,
                                        by=inv.user_id)
    await inv.tell(safe("Saved. " + config_text(defaults, core.settings)))
