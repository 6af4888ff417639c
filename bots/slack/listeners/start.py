"""Start a debate: root message in the channel, the spec threaded under it, the job with a SlackSink."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError

from bots.commands import StartDebate, build_spec
from bots.slack import blocks
from bots.slack.listeners.invocation import Invocation
from bots.slack.pacing import Urgency
from bots.slack.scope import remember_team
from bots.slack.sink import PLATFORM, SlackSink
from bots.slack.writer import SlackThreadWriter
from orchestrator.debate.jobs import TooManyDebates

log = logging.getLogger(__name__)

NOT_IN_CHANNEL = (
    "I can't post in this channel. Invite me first (`/invite @debate-bot`), or use a public channel."
)


async def start_debate(command: StartDebate, inv: Invocation) -> str | None:
    """Returns the new debate's id, or None when the user was told why it could not start."""
    core = inv.runtime.core
    spec, notes = build_spec(
        command, core.settings, core.registry, platform=PLATFORM, channel=inv.channel_id, requested_by=inv.user_id
    )
    pacer = inv.runtime.pacers.for_team(inv.team_id)
    root = SlackThreadWriter(inv.client, inv.channel_id, None, pacer, Urgency.STATUS)  # streaming turns go first
    text, root_blocks = blocks.root_message(spec, "running", "starting")
    try:
        root_ts = await root.post(text, root_blocks, in_thread=False)
    except SlackApiError as exc:
        error = exc.response.get("error")
        log.info("slack: root message for %s failed: %s", spec.id, error)
        await inv.tell(NOT_IN_CHANNEL if error in ("not_in_channel", "channel_not_found") else
                       f"I couldn't post the debate here (Slack said `{error}`).")
        return None
    spec = spec.model_copy(update={"thread": root_ts})
    await remember_team(core.store, spec.id, inv.channel_id, inv.team_id)
    sink = SlackSink(spec, inv.client, pacer, core.store, root_ts)
    try:
        core.jobs.start(spec, [sink])
    except TooManyDebates as exc:
        await sink.aclose()
        text, root_blocks = blocks.root_message(spec, "failed", str(exc))
        await root.edit(root_ts, text, root_blocks)
        await inv.tell(str(exc))
        return None
    await core.store.set_message(spec.id, "root", PLATFORM, inv.channel_id, root_ts)
    inv.runtime.spawn(sink.wait_closed(), name=f"slack-sink-{spec.id}")
    for note in notes:
        await inv.tell(note)
    return spec.id
