"""Who asked, where, and how to answer them: what every command handler receives."""

from __future__ import annotations

from dataclasses import dataclass

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.runtime import SlackRuntime
from bots.slack.scope import channel_scope
from bots.thread import Urgency
from orchestrator.log import Scope


@dataclass(frozen=True)
class Invocation:
    runtime: SlackRuntime
    client: AsyncWebClient
    respond: AsyncRespond
    team_id: str | None
    channel_id: str
    user_id: str
    request_key: str | None = None  # the request's id across retries (a debate it starts is keyed by it)

    async def channel_private(self) -> bool:
        """Whether the channel asked from is private (cached conversations.info; a DM always is)."""
        return await self.runtime.privacy.is_private(self.client, self.team_id, self.channel_id)

    async def scope(self) -> Scope:
        """What a read from here may see: passed to every log read this invocation makes."""
        return channel_scope(self.team_id, self.channel_id, await self.channel_private())

    async def tell(self, text: str) -> None:
        """An ephemeral answer only the invoking user sees."""
        await self.respond(text=text, response_type="ephemeral", replace_original=False)

    async def announce(self, text: str) -> None:
        """A message in the channel, for everyone (used for quotes), paced like every post."""
        async with self.runtime.pacers.for_workspace(self.team_id).posting(self.channel_id, Urgency.USER):
            await self.client.chat_postMessage(channel=self.channel_id, text=text, unfurl_links=False)
