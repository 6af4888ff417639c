"""Start a debate: root message in the channel, its thread's sink, then the debate queued for a worker.

Admission first (`chat_spec`: the quotas, its slot in the log), then the root message, whose ts the
log records as the debate's thread before anything is queued (a front that restarts finds the thread
there). The debate is enqueued under the request's key (the slash command's trigger_id): when another
debate already holds that key (a retry that got past the log's claim), nothing new starts: the root
just posted is deleted and the slot given back. Otherwise the tailer renders the debate's events from
the workers' stream into the thread.
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError

from bots.commands import StartDebate, chat_spec
from bots.page import page_link
from bots.slack.listeners.invocation import Invocation
from bots.slack.surface import PLATFORM, SlackThread
from bots.thread import ROOT, Paced, Running, ThreadSink, Urgency

log = logging.getLogger(__name__)

NOT_IN_CHANNEL = (
    "I can't post in this channel. Invite me first (`/invite @debate-bot`), or use a public channel."
)
NOT_A_FRONT = "This process takes no debates (it is not a front); see README, Restarts and deploys."


async def start_debate(command: StartDebate, inv: Invocation) -> str | None:
    """Returns the new debate's id, or None when the user was told why it could not start."""
    core, tailer = inv.runtime.core, inv.runtime.tailer
    if core.feed is None or tailer is None:
        await inv.tell(NOT_A_FRONT)
        return None
    spec, notes = await chat_spec(command, core, platform=PLATFORM, channel=inv.channel_id, requested_by=inv.user_id,
                                  workspace=inv.team_id, channel_private=await inv.channel_private())
    pacer = inv.runtime.pacers.for_workspace(inv.team_id)
    page = await page_link(core.store, core.settings, spec.id)  # the debate page's button (None: no DEBATE_PUBLIC_URL)
    channel = SlackThread(inv.client, inv.channel_id, None, page)
    root = Paced(channel, pacer)
    queued, sink = False, None
    try:  # admitted: from here on, a debate that does not start must give its slot back
        try:  # STATUS: streaming turns go first
            root_ts = await root.post(lambda: channel.root(spec, Running()), Urgency.STATUS, in_thread=False)
        except SlackApiError as exc:
            error = exc.response.get("error")
            log.info("slack: root message for %s failed: %s", spec.id, error)
            await core.abandon(spec.id, f"the root message could not be posted (Slack said {error})")
            await inv.tell(NOT_IN_CHANNEL if error in ("not_in_channel", "channel_not_found") else
                           f"I couldn't post the debate here (Slack said `{error}`).")
            return None
        spec = spec.model_copy(update={"thread": root_ts, "workspace": inv.team_id})
        await core.store.create_debate(spec)  # the thread, in the log before any worker or restart needs it
        sink = await ThreadSink.open(SlackThread(inv.client, inv.channel_id, root_ts, page), pacer, core.store, spec,
                                     root_ts)
        holder = await core.feed.enqueue(spec, inv.request_key)
        queued = True
        if holder != spec.id:
            await _withdraw(inv, sink, spec.id, root_ts, holder)
            return None
        tailer.follow(spec.id, sink)
    except BaseException as exc:
        if not queued:
            if sink is not None:
                await sink.aclose()
            await core.abandon(spec.id, f"it could not start: {str(exc) or type(exc).__name__}")
        raise
    for note in notes:
        await inv.tell(note)
    return spec.id


async def _withdraw(inv: Invocation, sink: ThreadSink, debate_id: str, root_ts: str, holder: str) -> None:
    """This request started debate `holder` already: take back the root and the slot of `debate_id`."""
    core = inv.runtime.core
    log.info("slack: request %s already holds debate %s; %s withdrawn", inv.request_key, holder, debate_id)
    await sink.aclose()
    try:
        await inv.client.chat_delete(channel=inv.channel_id, ts=root_ts)
    except SlackApiError as exc:
        log.info("slack: the root of withdrawn debate %s stays: %s", debate_id, exc.response.get("error"))
    await core.store.set_message(debate_id, ROOT, PLATFORM, inv.channel_id, root_ts, final=True)  # nothing to resume
    await core.abandon(debate_id, f"a repeat of the request that started debate {holder}")
