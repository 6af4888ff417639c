"""Who is asking, from where, and what they may do: the Slack side of the log's tenancy model.

Every read from chat passes the log a `Scope` built here from the invocation (team id, the channel
it came from, that channel's privacy), so the log filters inside the query: debates of public
channels of the same workspace, plus those of the asker's own channel. App Home is in no channel and
sees only public ones. A channel's privacy comes from `conversations.info`, cached per channel for a
few minutes, and asked once for a burst of commands (bots/remembered.py); a DM (`D…`) is private
without asking, and a channel Slack will not describe counts as private (the safe side: its debates
are then recalled only from inside it). Stopping a debate is for its requester and for workspace
admins and owners, and changing a channel's defaults for admins and owners only. An audience note is
signed with the author's display name as Slack shows it (the profile's display name, else the real
name, else the user id). Both come from one `users.info` per user, remembered for a minute
(`SlackUsers`): a demoted admin loses the power within that.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bots.remembered import Remembered
from bots.slack.surface import PLATFORM
from orchestrator.log import DebateRecord, Scope

log = logging.getLogger(__name__)

PRIVACY_TTL_S = 300.0
USER_TTL_S = 60.0  # the longest a demoted admin keeps an admin's powers here


@dataclass
class ChannelPrivacy:
    """Whether a channel is private (a private channel, a group DM or a DM), remembered for `ttl` seconds."""

    ttl: float = PRIVACY_TTL_S
    _known: Remembered[tuple[str | None, str], bool] = field(default_factory=Remembered)

    async def is_private(self, client: AsyncWebClient, team_id: str | None, channel_id: str) -> bool:
        if channel_id.startswith("D"):
            return True
        private = await self._known.get((team_id, channel_id), lambda: self._ask(client, channel_id), self.ttl)
        return True if private is None else private

    @staticmethod
    async def _ask(client: AsyncWebClient, channel_id: str) -> bool | None:
        try:
            response = await client.conversations_info(channel=channel_id)
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            # not described (no scope, not a member, Slack unreachable): counted private, not cached
            error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
            log.info("slack: conversations.info %s failed (%s); treating it as private", channel_id, error)
            return None
        info = response.get("channel") or {}
        return bool(info.get("is_private") or info.get("is_im") or info.get("is_mpim") or info.get("is_group"))


@dataclass
class SlackUsers:
    """Who a user is (`users.info`), asked once and remembered for `ttl` seconds, for every need: the name
    that signs their notes, whether they are an admin. A failed lookup is not remembered."""

    ttl: float = USER_TTL_S
    _known: Remembered[tuple[str | None, str], dict[str, Any]] = field(default_factory=Remembered)

    async def name(self, client: AsyncWebClient, team_id: str | None, user_id: str) -> str:
        """Their display name as the channel shows it; the user id when Slack will not say."""
        user = await self._user(client, team_id, user_id) or {}
        profile = user.get("profile") or {}
        name = str(profile.get("display_name") or profile.get("real_name") or user.get("real_name") or "").strip()
        return name or user_id

    async def is_admin(self, client: AsyncWebClient, team_id: str | None, user_id: str) -> bool:
        """A workspace admin or owner; anyone Slack will not describe is not."""
        user = await self._user(client, team_id, user_id) or {}
        return bool(user.get("is_admin") or user.get("is_owner") or user.get("is_primary_owner"))

    async def may_stop(self, client: AsyncWebClient, team_id: str | None, record: DebateRecord, user_id: str) -> bool:
        """Its requester, or a workspace admin or owner."""
        return (record.requested_by is not None and record.requested_by == user_id) or await self.is_admin(
            client, team_id, user_id)

    async def _user(self, client: AsyncWebClient, team_id: str | None, user_id: str) -> dict[str, Any] | None:
        return await self._known.get((team_id, user_id), lambda: self._ask(client, user_id), self.ttl)

    @staticmethod
    async def _ask(client: AsyncWebClient, user_id: str) -> dict[str, Any] | None:
        try:
            response = await client.users_info(user=user_id)
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
            log.info("slack: users.info %s failed (%s)", user_id,
                     exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__)
            return None
        return dict(response.get("user") or {})


def channel_scope(team_id: str | None, channel_id: str, private: bool) -> Scope:
    """What a read from inside `channel_id` may see."""
    return Scope(platform=PLATFORM, workspace=team_id, channel=channel_id, channel_private=private)


def home_scope(team_id: str | None) -> Scope:
    """App Home is inside no channel: public channels' debates of the workspace only."""
    return Scope(platform=PLATFORM, workspace=team_id)
