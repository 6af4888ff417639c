"""Posts and edits messages in one Slack thread, paced; implements bots.thread.live.ThreadWriter and
bots.thread.live.LatestTextWriter.

Text handed to the writer is already safe mrkdwn (LiveTurns and the renderers neutralize model and
user text); the writer only keeps it within Slack's limits and paces every call. A message may be
given as a function (`post_message`, `edit_message`, `post_latest`, `edit_latest`): it is called
when the pacer lets the call go, so a call that waited for its turn carries the newest text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.pacing import Pacer, Urgency
from bots.thread.text import truncate

STREAM_LIMIT = 3500  # a streamed message continues in a new reply before this
TEXT_LIMIT = 3900  # chat.postMessage / chat.update answer msg_too_long near 4,000

Blocks = list[dict[str, Any]]
Message = tuple[str, Blocks | None]  # text and, optionally, blocks


class SlackThreadWriter:
    limit: int = STREAM_LIMIT

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str | None, pacer: Pacer,
                 urgency: Urgency = Urgency.REPLY) -> None:
        """`urgency` ranks this writer's calls against others waiting for the same budget."""
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.pacer = pacer
        self.urgency = urgency

    @property
    def min_edit_interval(self) -> float:
        return self.pacer.min_edit_interval()

    def _key(self, ts: str) -> str:
        return f"{self.channel}:{ts}"

    async def post(self, text: str, blocks: Blocks | None = None, *, in_thread: bool = True,
                   urgency: Urgency | None = None) -> str:
        """Post a message (a thread reply unless `in_thread` is False); returns its ts."""
        return await self.post_message(lambda: (text, blocks), in_thread=in_thread, urgency=urgency)

    async def post_latest(self, render: Callable[[], str]) -> str:
        return await self.post_message(lambda: (render(), None))

    async def post_message(self, build: Callable[[], Message], *, in_thread: bool = True,
                           urgency: Urgency | None = None) -> str:
        """Post what `build` returns when the channel's turn comes; returns the message's ts."""
        async with self.pacer.posting(self.channel, self.urgency if urgency is None else urgency):
            text, blocks = build()
            kwargs: dict[str, Any] = {"channel": self.channel, "text": truncate(text, TEXT_LIMIT)}
            if blocks is not None:
                kwargs["blocks"] = blocks
            if in_thread and self.thread_ts:
                kwargs["thread_ts"] = self.thread_ts
            response = await self.client.chat_postMessage(**kwargs, unfurl_links=False, unfurl_media=False)
        ts = str(response["ts"])
        self.pacer.shown(self._key(ts))
        return ts

    async def edit(self, message_id: str, text: str, blocks: Blocks | None = None, *,
                   urgency: Urgency | None = None) -> None:
        await self.edit_message(message_id, lambda: (text, blocks), urgency=urgency)

    async def edit_latest(self, message_id: str, render: Callable[[], str | None]) -> None:
        def build() -> Message | None:
            text = render()
            return None if text is None else (text, None)

        await self.edit_message(message_id, build)

    async def edit_message(self, message_id: str, build: Callable[[], Message | None], *,
                           urgency: Urgency | None = None) -> bool:
        """Edit to what `build` returns once the workspace has an update to spend; `build` returning
        None skips the call. Returns whether the message was edited."""
        key = self._key(message_id)
        await self.pacer.before_update(key, self.urgency if urgency is None else urgency)
        built = build()
        if built is None:
            return False
        text, blocks = built
        kwargs: dict[str, Any] = {"channel": self.channel, "ts": message_id, "text": truncate(text, TEXT_LIMIT)}
        if blocks is not None:
            kwargs["blocks"] = blocks
        try:
            await self.client.chat_update(**kwargs)
        finally:
            self.pacer.updated(key)
        return True
