"""Posts and edits messages in one Slack thread, paced; implements bots.live.ThreadWriter.

Text handed to the writer is already safe mrkdwn (LiveTurns and the renderers neutralize model and
user text); the writer only keeps it within Slack's limits and paces every call.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.pacing import Pacer
from bots.text import truncate

STREAM_LIMIT = 3500  # a streamed message continues in a new reply before this
TEXT_LIMIT = 3900  # chat.postMessage / chat.update answer msg_too_long near 4,000


class SlackThreadWriter:
    limit: int = STREAM_LIMIT

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str | None, pacer: Pacer) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.pacer = pacer

    @property
    def min_edit_interval(self) -> float:
        return self.pacer.min_edit_interval()

    async def post(self, text: str, blocks: list[dict[str, Any]] | None = None, *, in_thread: bool = True) -> str:
        """Post a message (a thread reply unless `in_thread` is False); returns its ts."""
        kwargs: dict[str, Any] = {"channel": self.channel, "text": truncate(text, TEXT_LIMIT)}
        if blocks is not None:
            kwargs["blocks"] = blocks
        if in_thread and self.thread_ts:
            kwargs["thread_ts"] = self.thread_ts
        async with self.pacer.posting(self.channel):
            response = await self.client.chat_postMessage(**kwargs, unfurl_links=False, unfurl_media=False)
        return str(response["ts"])

    async def edit(self, message_id: str, text: str, blocks: list[dict[str, Any]] | None = None) -> None:
        await self.pacer.before_update(f"{self.channel}:{message_id}")
        kwargs: dict[str, Any] = {"channel": self.channel, "ts": message_id, "text": truncate(text, TEXT_LIMIT)}
        if blocks is not None:
            kwargs["blocks"] = blocks
        await self.client.chat_update(**kwargs)
