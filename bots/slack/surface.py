"""Slack's surface for `bots.thread`: post and edit one message, Slack's limits, and how a debate looks.

Messages are `(text, blocks)`; the blocks come from `bots.slack.blocks`, which makes every piece of
model or user text safe. A turn's message is its Markdown in a `markdown` block (Slack renders it)
with a plain-text `text` for notifications; a part holds at most `STREAM_LIMIT` characters, far under
the 12,000 a message's markdown blocks may hold, because a streamed part is sent again whole at every
chat.update and Slack expands one markdown block into several (messages have been refused with
msg_blocks_too_long under the documented limit).
A debate's root is a channel message and its thread is the replies under it (`thread_ts`), so both
live in one channel: posts are spaced per channel (about 1 per second) and
chat.update draws from one budget per workspace (Tier 3, about 50 a minute). Where edits are that
scarce, a turn's first post waits for its first text (`first_post_grace`), round progress shows on the
root only, and a debate that ends without a verdict says so on the root, not in the thread.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack import blocks
from bots.slack.markdown import neutralize_markdown
from bots.thread import Ended, Limits, RootState, Urgency
from bots.thread.pacing import StreamLimits
from bots.thread.streams import StreamRefused
from bots.thread.text import truncate
from orchestrator.events import Notice, RoundStarted, TurnStarted
from orchestrator.log import Tally
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict

log = logging.getLogger(__name__)

PLATFORM = "slack"
METADATA_EVENT = "debate_message"  # a thread post's metadata: {"key": its message key}, for `find`
STREAM_LIMIT = 3500  # a streamed message continues in a new reply before this
TEXT_LIMIT = 3900  # chat.postMessage / chat.update answer msg_too_long near 4,000

Blocks = list[dict[str, Any]]
Message = tuple[str, Blocks | None]  # text and, optionally, blocks

# How far a request moves in its queue, in periods of that budget (one post interval for posts,
# window / updates for chat.update): negative goes ahead of older requests, positive behind newer ones.
POST_ORDER = {Urgency.OPEN: 0.0, Urgency.USER: 0.0, Urgency.TEXT: 0.0, Urgency.REPLY: 10.0, Urgency.STATUS: 120.0}
UPDATE_ORDER = {Urgency.OPEN: -30.0, Urgency.USER: -30.0, Urgency.TEXT: 0.0, Urgency.REPLY: 3.0,
                Urgency.STATUS: 30.0}


def slack_streams(window: float = 60.0) -> StreamLimits:
    """Slack's native streams, a little under the published limits: chat.startStream and chat.stopStream
    are Tier 2 (about 20 a minute per workspace; a stream takes one of each), chat.appendStream Tier 4
    (about 100); Slack closes a stream after about 5 minutes, so ours stop at 4.5 (`window` scales all)."""
    return StreamLimits(calls=18, window=window, appends=90, max_age=270.0 * window / 60.0)


def slack_limits(post_interval: float = 1.0, updates: int = 45, window: float = 60.0, edit_interval: float = 1.0,
                 active_horizon: float = 5.0, first_post_grace: float | None = None,
                 placeholder_after: float = 8.0, streams: StreamLimits | bool = False) -> Limits:
    """Slack's limits: one post per `post_interval` per channel, the published limit itself (the pacer counts
    it from when the last post was answered, so no post reaches Slack sooner than that after the one before),
    and `updates` chat.update per `window` per workspace, a little under the published 50. A turn's first post waits
    `first_post_grace` after its first text (default: half a post interval, which a channel's next
    post often waits anyway). `streams`: a turn is a native stream when the workspace's start budget
    has room, else it is posted and updated (True: `slack_streams(window)`; False: always post and
    update). Off by default, on with SLACK_NATIVE_STREAMS=true: a stream's message carries no key a
    resumed renderer can find it by, so only posts keep the no-duplicate-after-kill guarantee, and the
    streams' gain in first-text time is within a run's noise."""
    stream_limits = slack_streams(window) if streams is True else streams or None
    return Limits(streams=stream_limits,
        channel_writes=1, channel_window=post_interval, edit_interval=edit_interval, edits=updates,
        edit_window=window, write_order=POST_ORDER, edit_order=UPDATE_ORDER, active_horizon=active_horizon,
        first_post_grace=post_interval / 2 if first_post_grace is None else first_post_grace,
        placeholder_after=placeholder_after,
    )


class SlackThread:
    """One debate's root message in a channel and the thread of replies under it (`root_ts`; None
    before the root exists, or to reach the channel only)."""

    platform = PLATFORM
    stream_limit = STREAM_LIMIT

    def __init__(self, client: AsyncWebClient, channel: str, root_ts: str | None, page: str | None = None) -> None:
        self.client = client
        self.page = page  # the debate page's link (bots/page), a button on the root and the verdict
        self.root_channel = self.thread_channel = channel
        self.root_ts = root_ts

    async def post(self, message: Message, *, in_thread: bool = True) -> str:
        return await self._post(message, in_thread, None)

    async def post_keyed(self, message: Message, key: str, *, in_thread: bool = True) -> str:
        """`post`, with the message's key in its metadata, so `find` finds it again."""
        return await self._post(message, in_thread, {"event_type": METADATA_EVENT, "event_payload": {"key": key}})

    async def find(self, key: str, *, in_thread: bool = True) -> str | None:
        """The ts of the thread reply posted with `key` (conversations.replies, with metadata), or None.
        Without the history scopes (an install older than them) nothing can be found: None."""
        if not in_thread or not self.root_ts:
            return None
        cursor: str | None = None
        while True:
            try:
                page = await self.client.conversations_replies(channel=self.root_channel, ts=self.root_ts, limit=200,
                                                               include_all_metadata=True, cursor=cursor)
            except SlackApiError as error:
                if error.response.get("error") in ("missing_scope", "not_allowed_token_type"):
                    log.warning("slack: cannot read threads (add the channels:history and groups:history scopes);"
                                " a post whose answer was lost may show twice")
                    return None
                raise
            for found in page.get("messages") or []:
                metadata = found.get("metadata") or {}
                if metadata.get("event_type") == METADATA_EVENT and (metadata.get("event_payload") or {}
                                                                      ).get("key") == key:
                    return str(found["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not page.get("has_more") or cursor is None:
                return None

    async def _post(self, message: Message, in_thread: bool, metadata: dict[str, Any] | None) -> str:
        text, message_blocks = message
        kwargs: dict[str, Any] = {"channel": self.root_channel, "text": truncate(text, TEXT_LIMIT)}
        if message_blocks is not None:
            kwargs["blocks"] = message_blocks
        if in_thread and self.root_ts:
            kwargs["thread_ts"] = self.root_ts
        if metadata is not None:
            kwargs["metadata"] = metadata
        response = await self.client.chat_postMessage(**kwargs, unfurl_links=False, unfurl_media=False)
        return str(response["ts"])

    async def edit(self, message_id: str, message: Message, *, in_thread: bool = True) -> None:
        text, message_blocks = message
        kwargs: dict[str, Any] = {"channel": self.root_channel, "ts": message_id, "text": truncate(text, TEXT_LIMIT)}
        if message_blocks is not None:
            kwargs["blocks"] = message_blocks
        await self.client.chat_update(**kwargs)

    async def start_stream(self, text: str, recipient: tuple[str, str]) -> str:
        """chat.startStream in the thread, for the debate's requester (channel streams need the
        recipient's user and team); any refusal is a `StreamRefused`."""
        user, team = recipient
        try:
            response = await self.client.chat_startStream(channel=self.root_channel, thread_ts=self.root_ts or "",
                                                          markdown_text=text, recipient_user_id=user,
                                                          recipient_team_id=team)
        except SlackApiError as exc:
            raise StreamRefused(str(exc.response.get("error") or exc)) from exc
        except Exception as exc:  # a Slack-compatible server without streams may answer anything: not a stream
            raise StreamRefused(type(exc).__name__) from exc
        if not response.get("ts"):
            raise StreamRefused("no ts in chat.startStream's answer")
        return str(response["ts"])

    async def append_stream(self, message_id: str, text: str) -> None:
        await self.client.chat_appendStream(channel=self.root_channel, ts=message_id, markdown_text=text)

    async def stop_stream(self, message_id: str) -> None:
        await self.client.chat_stopStream(channel=self.root_channel, ts=message_id)

    def root(self, spec: DebateSpec, state: RootState) -> Message:
        if isinstance(state, Ended):
            return blocks.final_root(spec, state.outcome, state.verdict, self.page)
        return blocks.root_message(spec, "running", blocks.round_status(state.round) if state.round else "starting",
                                   self.page)

    def round(self, event: RoundStarted) -> Message | None:
        return None  # progress goes into the root's status: no post takes a channel slot ahead of turn text

    def turn_header(self, event: TurnStarted) -> str:
        return blocks.turn_header(event)

    def neutralize(self, text: str) -> str:
        return neutralize_markdown(text)

    def turn(self, seat: Seat, chunk: str) -> Message:
        return blocks.turn_message(chunk)

    def turn_ending(self, turn: Turn) -> str | None:
        if turn.status == "failed":  # the live thread neutralizes it: the error is shown as text
            return f"{turn.text}\n\n❌ _This turn failed: {turn.error or 'no answer'}_".strip()
        if turn.status == "empty" or not turn.text.strip():
            return "_(no answer)_"
        return None

    def notice(self, event: Notice) -> list[Message]:
        return [blocks.notice_line(event)]

    def verdict(self, spec: DebateSpec, verdict: Verdict, tally: Tally, outcome: Outcome | None) -> Message:
        tokens = None if outcome is None else (outcome.input_tokens, outcome.output_tokens)
        return blocks.verdict_message(spec, verdict, tally, tokens, self.page)

    def ended(self, outcome: Outcome) -> Message | None:
        return None  # the root message's final status says how it ended
