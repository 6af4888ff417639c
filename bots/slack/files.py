"""A Slack message, its files and its thread as materials for a debate's brief.

Only what the asker can see is read: the message they clicked **Debate this** on (its channel is where the
debate starts), the files attached to it, and its thread. A file is described by `files.info` and
downloaded from its `url_private_download` with the bot token (scope `files:read`); the token is sent only
to Slack's own hosts (or the configured API host), never to a URL a user typed. A link to a Slack file
given with `--context` is read the same way, and refused unless that file was shared in the channel asked
from. Everything else a user links to is fetched through orchestrator/brief/fetch.py, without credentials.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.commands import CommandError
from orchestrator.brief.gather import MAX_FILE_BYTES, Material

log = logging.getLogger(__name__)

DOWNLOAD_TIMEOUT_S = 20.0
MAX_THREAD_MESSAGES = 500
_FILE_ID = re.compile(r"(?<![A-Z0-9])(F[A-Z0-9]{6,})(?![A-Z0-9])")
_MENTION = re.compile(r"<[@#!]([^>|]+)(?:\|([^>]*))?>")


class SlackFiles:
    """Reads messages, threads and files of one workspace for a brief, through `client` (its bot token)."""

    def __init__(self, client: AsyncWebClient, api_base_url: str) -> None:
        self.client = client
        self.api_host = urlsplit(api_base_url).hostname or "slack.com"

    def is_slack_file(self, url: str) -> bool:
        """Whether `url` points at a file uploaded to Slack (a permalink or a download link)."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        ours = host == self.api_host or host == "slack.com" or host.endswith(".slack.com")
        return ours and "/files" in parts.path and _FILE_ID.search(parts.path) is not None

    async def message_materials(self, channel: str, ts: str, thread_ts: str | None,
                                clicked: dict[str, Any] | None = None) -> list[Material]:
        """The message at `ts`, each of its files, and (when it is in a thread or starts one) the thread's
        other messages, as materials in that order."""
        thread = await self._thread(channel, thread_ts or ts)
        message = next((m for m in thread if m.get("ts") == ts), None) or clicked or {}
        materials: list[Material] = []
        text = plain(str(message.get("text") or ""))
        if text.strip():
            materials.append(Material.from_text(text, kind="message", origin=f"Slack message {channel}/{ts}",
                                                title=first_line(text) or "Slack message"))
        for file in message.get("files") or []:
            materials.append(await self.file_material(str(file.get("id")), channel))
        others = [m for m in thread if m.get("ts") != ts and str(m.get("text") or "").strip()]
        if others:
            lines = [f"{m.get('user') or 'someone'}: {plain(str(m.get('text')))}" for m in others]
            replies = f"{len(others)} repl{'ies' if len(others) != 1 else 'y'}"
            materials.append(Material.from_text("\n\n".join(lines), kind="thread",
                                                origin=f"Slack thread {channel}/{thread_ts or ts}",
                                                title=f"Thread ({replies})"))
        return materials

    async def link_material(self, url: str, channel: str) -> Material:
        """A `--context` link to a Slack file: read when the file was shared in `channel`, else refused."""
        found = _FILE_ID.search(urlsplit(url).path)
        if found is None:
            raise CommandError("That Slack link names no file I can read.")
        return await self.file_material(found.group(1), channel)

    async def file_material(self, file_id: str, channel: str) -> Material:
        """One file, described by files.info and downloaded with the bot token; CommandError when it was
        not shared in `channel` (a user may only attach what the channel they ask from can see)."""
        try:
            info = (await self.client.files_info(file=file_id))["file"]
        except SlackApiError as exc:
            raise CommandError(f"I couldn't read a Slack file (Slack said `{exc.response.get('error')}`); "
                               "the app needs the `files:read` scope.") from None
        shared = {*info.get("channels", ()), *info.get("groups", ()), *info.get("ims", ())}
        if channel not in shared:
            raise CommandError("That Slack file was not shared in this channel, so it can't be used here: share it "
                               "in this channel first.")
        name = str(info.get("name") or file_id)
        data = await self._download(str(info.get("url_private_download") or info.get("url_private") or ""))
        title = str(info.get("title") or "")  # Slack's title is the file's name unless someone renamed it
        return Material(origin=name, name=name, media_type=str(info.get("mimetype") or "") or None,
                        title="" if title == name else title, data=data)

    async def _thread(self, channel: str, root: str) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        cursor: str | None = None
        try:
            while len(messages) < MAX_THREAD_MESSAGES:
                page = await self.client.conversations_replies(channel=channel, ts=root, limit=200,
                                                               **({"cursor": cursor} if cursor else {}))
                messages += page.get("messages") or []
                cursor = (page.get("response_metadata") or {}).get("next_cursor")
                if not page.get("has_more") or not cursor:
                    break
        except SlackApiError as exc:
            log.info("slack: conversations.replies %s/%s: %s", channel, root, exc.response.get("error"))
        return messages[:MAX_THREAD_MESSAGES]

    async def _download(self, url: str) -> bytes:
        """A file's bytes with the bot token, from Slack's hosts only, at most MAX_FILE_BYTES."""
        host = urlsplit(url).hostname or ""
        if not (host == self.api_host or host == "slack.com" or host.endswith(".slack.com")):
            raise CommandError("That Slack file's download link is not on Slack; it was not read.")
        headers = {"Authorization": f"Bearer {self.client.token}"}
        try:
            async with asyncio.timeout(DOWNLOAD_TIMEOUT_S), aiohttp.ClientSession(trust_env=False) as session, \
                    session.get(url, headers=headers, allow_redirects=False) as response:
                if response.status != 200:
                    raise CommandError(f"Slack would not hand over a file (HTTP {response.status}); the app needs "
                                       "the `files:read` scope.")
                body = bytearray()
                async for chunk in response.content.iter_chunked(64 * 1024):
                    body += chunk
                    if len(body) > MAX_FILE_BYTES:
                        raise CommandError(f"A Slack file is past the {MAX_FILE_BYTES // 2**20} MB a file may be.")
                return bytes(body)
        except (aiohttp.ClientError, TimeoutError):
            raise CommandError("I couldn't download a Slack file; please try again.") from None


def plain(text: str) -> str:
    """Slack's mrkdwn references made plain: `<@U1>` → `@U1`, `<#C1|general>` → `#general`, links kept."""
    return _MENTION.sub(lambda m: ("@" if m.group(0)[1] == "@" else "#" if m.group(0)[1] == "#" else "")
                        + (m.group(2) or m.group(1)), text)


def first_line(text: str) -> str:
    """The first non-empty line, as a topic or title (at most 200 characters)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:200]
