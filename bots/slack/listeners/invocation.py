"""Who asked, where, and how to answer them: what every command handler receives."""

from __future__ import annotations

from dataclasses import dataclass

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.pacing import Urgency
from bots.slack.runtime import SlackRuntime


@dataclass(frozen=True)
class Invocation:
    runtime: SlackRuntime
    client: AsyncWebClient
    respond: AsyncRespond
    team_id: str | None
    channel_id: str
    user_id: str

    async def tell(self, text: str) -> None:
        """An ephemeral answer only the invoking user sees."""
        await self.respond(text=text, response_type="ephemeral", replace_original=False)

    async def announce(self, text: str) -> None:
        """A message in the channel, for everyone (used for quotes), paced like every post."""
        async with self.runtime.pacers.for_team(self.team_id).posting(self.channel_id, Urgency.USER):
            await self.client.chat_postMessage(channel=self.channel_id, text=text, unfurl_links=False)
