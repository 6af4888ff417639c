"""Start a debate from Slack: what Slack adds to the one start path (`bots.thread.start`) is its root.

The root message is posted in the channel (paced as a STATUS write: streaming turns go first); its ts
is the debate's thread. Taking it back is `chat.delete`. Everything else, in order, with its undo, is
`start_in_thread`; the notes of the seating are told to the user once the debate runs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from slack_sdk.errors import SlackApiError

from bots.commands import StartDebate
from bots.page import page_link
from bots.settings import bot_settings
from bots.slack.files import SlackFiles
from bots.slack.listeners.invocation import Invocation
from bots.slack.surface import PLATFORM, SlackThread
from bots.thread import Paced, Running, Urgency
from bots.thread.pacing import Pacer
from bots.thread.start import Origin, PostedRoot, RootRefused, start_in_thread
from orchestrator.brief.gather import Material
from orchestrator.models import DebateSpec

log = logging.getLogger(__name__)

NOT_IN_CHANNEL = (
    "I can't post in this channel. Invite me first (`/invite @debate-bot`), or use a public channel."
)


@dataclass
class SlackRoot:
    """Posts a debate's root in the channel asked from, and deletes it."""

    inv: Invocation
    pacer: Pacer

    async def post(self, spec: DebateSpec, notes: list[str]) -> PostedRoot:
        core = self.inv.runtime.core
        page = await page_link(core, bot_settings(core.settings), spec.id)  # the page's button (None: no public URL)
        channel = SlackThread(self.inv.client, self.inv.channel_id, None, page)
        try:
            ts = await Paced(channel, self.pacer).post(lambda: channel.root(spec, Running()), Urgency.STATUS,
                                                       in_thread=False)
        except SlackApiError as exc:
            error = exc.response.get("error")
            user_text = (NOT_IN_CHANNEL if error in ("not_in_channel", "channel_not_found") else
                         f"I couldn't post the debate here (Slack said `{error}`).")
            raise RootRefused(user_text, f"the root message could not be posted (Slack said {error})") from None
        return PostedRoot(SlackThread(self.inv.client, self.inv.channel_id, ts, page), ts, ts)

    async def delete(self, posted: PostedRoot) -> None:
        try:
            await self.inv.client.chat_delete(channel=self.inv.channel_id, ts=posted.root_id)
        except SlackApiError as exc:
            log.info("slack: a withdrawn debate's root %s stays: %s", posted.root_id, exc.response.get("error"))


async def start_debate(command: StartDebate, inv: Invocation, materials: Sequence[Material] = ()) -> str | None:
    """Returns the new debate's id, or None when this request started nothing new (a repeat). `materials`:
    what **Debate this** read for the brief; a `--context` link to a Slack file is read here with the bot
    token, and refused unless the file was shared in this channel (bots/slack/files.py)."""
    files = SlackFiles(inv.client, bot_settings(inv.runtime.core.settings).slack_api_base_url)
    slack_links = [link for link in command.context if files.is_slack_file(link)]
    if slack_links:
        materials = [*materials, *[await files.link_material(link, inv.channel_id) for link in slack_links]]
        command = command.model_copy(update={"context": tuple(c for c in command.context if c not in slack_links)})
    origin = Origin(platform=PLATFORM, channel=inv.channel_id, user=inv.user_id, workspace=inv.team_id,
                    channel_private=await inv.channel_private(), request_key=inv.request_key)
    poster = SlackRoot(inv, inv.runtime.pacers.for_workspace(inv.team_id))
    started = await start_in_thread(inv.runtime.core, inv.runtime.tailer, command, origin, poster, materials)
    if started is None:
        return None
    for note in started.notes:
        await inv.tell(note)
    return started.spec.id
