"""Multi-workspace install: OAuth settings over SQLite stores that never block the event loop.

slack_sdk's SQLite stores do their I/O inline even in their `async_*` methods, and
`async_delete_all` (called on app_uninstalled) falls back to the blocking deletes. These subclasses
run every store operation in a worker thread.

The store holds every workspace's bot token in plain text, so its file is created (or tightened) to
0600 before SQLite opens it, whatever the umask; SQLite gives its -journal, -wal and -shm files the
database file's mode.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.sqlite3 import SQLite3InstallationStore
from slack_sdk.oauth.state_store.sqlite3 import SQLite3OAuthStateStore

from orchestrator.config import Settings

# *:read and users:read: conversations.info (is the channel private?) and users.info (an admin?), bots/slack/scope.py
BOT_SCOPES = ("commands", "chat:write", "chat:write.public", "channels:read", "groups:read", "im:read", "mpim:read",
              "users:read")
STATE_EXPIRY_S = 600


class AsyncSQLiteInstallationStore(SQLite3InstallationStore):
    async def async_save(self, installation: Installation) -> None:
        await asyncio.to_thread(self.save, installation)

    async def async_save_bot(self, bot: Bot) -> None:
        await asyncio.to_thread(self.save_bot, bot)

    async def async_find_bot(
        self, *, enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None = False
    ) -> Bot | None:
        return await asyncio.to_thread(
            self.find_bot, enterprise_id=enterprise_id, team_id=team_id, is_enterprise_install=is_enterprise_install
        )

    async def async_find_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        return await asyncio.to_thread(
            self.find_installation, enterprise_id=enterprise_id, team_id=team_id, user_id=user_id,
            is_enterprise_install=is_enterprise_install,
        )

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        await asyncio.to_thread(self.delete_bot, enterprise_id=enterprise_id, team_id=team_id)

    async def async_delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        await asyncio.to_thread(self.delete_installation, enterprise_id=enterprise_id, team_id=team_id, user_id=user_id)

    async def async_delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        await self.async_delete_bot(enterprise_id=enterprise_id, team_id=team_id)
        await self.async_delete_installation(enterprise_id=enterprise_id, team_id=team_id)


class AsyncSQLiteStateStore(SQLite3OAuthStateStore):
    async def async_issue(self, *args: object, **kwargs: object) -> str:
        return await asyncio.to_thread(self.issue, *args, **kwargs)

    async def async_consume(self, state: str) -> bool:
        return await asyncio.to_thread(self.consume, state)


def install_db_path(settings: Settings) -> Path:
    """Installations live beside the debate log, in their own file: `<DEBATE_DB>.slack-installs.db`."""
    db = Path(settings.debate_db)
    return db.with_name(db.name + ".slack-installs.db")


def make_private(path: Path) -> None:
    """Create `path` if missing and set it to 0600 (owner read/write only). The chmod is needed either
    way: a umask can only narrow the mode os.open asks for, and an existing file keeps its old mode."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))  # never wider than 0600, even for a moment
    os.chmod(path, 0o600)


def oauth_settings(settings: Settings, *, redirect_uri: str | None = None) -> AsyncOAuthSettings:
    path = install_db_path(settings)
    make_private(path)
    database = str(path)
    installations = AsyncSQLiteInstallationStore(database=database, client_id=settings.slack_client_id or "")
    states = AsyncSQLiteStateStore(database=database, expiration_seconds=STATE_EXPIRY_S)
    installations.init()  # create the tables once, before worker threads race to
    states.init()
    return AsyncOAuthSettings(
        client_id=settings.slack_client_id,
        client_secret=settings.slack_client_secret,
        scopes=list(BOT_SCOPES),
        redirect_uri=redirect_uri,
        installation_store=installations,
        state_store=states,
    )
