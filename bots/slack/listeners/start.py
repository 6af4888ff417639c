"""Start a debate: root message in the channel, the spec threaded under it, the job with a ThreadSink."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError

from bots.commands import StartDebate, chat_spec
from bots.slack.listeners.invocation import Invocation
from bots.slack.surface import PLATFORM, SlackThread
from bots.thread import Paced, Running, ThreadSink, Urgency

log = logging.getLogger(__name__)

NOT_IN_CHANNEL = (
    "I can't post in this channel. Invite me first (`/invite @debate-bot`), or use a public channel."
)


async def start_debate(command: StartDebate, inv: Invocation) -> str | None:
    """Returns the new debate's id, or None when the user was told why it could not start."""
    core = inv.runtime.core
    spec, notes = await chat_spec(command, core, platform=PLATFORM, channel=inv.channel_id, requested_by=inv.user_id,
                                  workspace=inv.team_id, channel_private=await inv.channel_private())
    pacer = inv.runtime.pacers.for_workspace(inv.team_id)
    channel = SlackThread(inv.client, inv.channel_id, None)
    root = Paced(channel, pacer)
    try:  # admitted: from here on, a debate that does not start must give its slot back
        try:  # STATUS: streaming turns go first
            root_ts = await root.post(lambda: channel.root(spec, Running()), Urgency.STATUS, in_thread=False)
        except SlackApiError as exc:
            error = exc.response.get("error")
            log.info("slack: root message for %s failed: %s", spec.id, error)
            await core.jobs.abandon(spec.id, f"the root message could not be posted (Slack said {error})")
            await inv.tell(NOT_IN_CHANNEL if error in ("not_in_channel", "channel_not_found") else
                           f"I couldn't post the debate here (Slack said `{error}`).")
            return None
        spec = spec.model_copy(update={"thread": root_ts, "workspace": inv.team_id})
        sink = await ThreadSink.open(SlackThread(inv.client, inv.channel_id, root_ts), pacer, core.store, spec,
                                     root_ts)
        core.jobs.start(spec, [sink])
    except BaseException as exc:
        if not core.jobs.is_running(spec.id):
            await core.jobs.abandon(spec.id, f"it could not start: {str(exc) or type(exc).__name__}")
        raise
    inv.runtime.spawn(sink.wait_closed(), name=f"slack-sink-{spec.id}")
    for note in notes:
        await inv.tell(note)
    return spec.id
