"""Multi-workspace install: the OAuth settings, over stores that never block the event loop
(bots/slack/install_stores.py): on the log's Postgres database when DEBATE_DATABASE_URL is set, so
that any front serves any workspace; otherwise in a SQLite file beside the debate log.

The SQLite store holds every workspace's bot token in plain text, so its file is created (or
tightened) to 0600 before SQLite opens it, whatever the umask; SQLite gives its -journal, -wal and -shm
files the database file's mode.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore

from bots.settings import BotSettings
from bots.slack.install_stores import (
    AsyncSQLiteInstallationStore,
    AsyncSQLiteStateStore,
    PostgresInstallationStore,
    PostgresStateStore,
    create_postgres_tables,
    postgres_engine,
)
from orchestrator.config import ConfigError, Settings
from orchestrator.log.postgres import redact_url
from orchestrator.private_files import create_private

# *:read and users:read: conversations.info (is the channel private?) and users.info (an admin?), bots/slack/scope.py
BOT_SCOPES = ("commands", "chat:write", "chat:write.public", "channels:read", "groups:read", "im:read", "mpim:read",
              "users:read")
STATE_EXPIRY_S = 600


def install_db_path(settings: Settings) -> Path:
    """Without Postgres, installations live beside the debate log, in their own file:
    `<DEBATE_DB>.slack-installs.db`."""
    db = Path(settings.debate_db)
    return db.with_name(db.name + ".slack-installs.db")



def sqlite_stores(settings: BotSettings) -> tuple[AsyncSQLiteInstallationStore, AsyncSQLiteStateStore]:
    path = install_db_path(settings)
    create_private(path, tighten=True)  # it holds the workspaces' tokens
    database = str(path)
    installations = AsyncSQLiteInstallationStore(database=database, client_id=settings.slack_client_id or "")
    states = AsyncSQLiteStateStore(database=database, expiration_seconds=STATE_EXPIRY_S)
    installations.init()  # create the tables once, before worker threads race to
    states.init()
    return installations, states


def postgres_stores(settings: BotSettings, url: str) -> tuple[PostgresInstallationStore, PostgresStateStore]:
    """The stores on the log's database, their tables created if missing. Raises ConfigError (the URL
    without its password) when the database cannot be reached."""
    engine = postgres_engine(url)
    installations = PostgresInstallationStore(client_id=settings.slack_client_id or "", engine=engine)
    states = PostgresStateStore(expiration_seconds=STATE_EXPIRY_S, engine=engine)
    try:
        create_postgres_tables(engine, installations.metadata, states.metadata)
    except sqlalchemy.exc.SQLAlchemyError as error:
        engine.dispose()
        reason = str(getattr(error, "orig", None) or type(error).__name__).splitlines()[0]
        raise ConfigError(f"cannot keep Slack installations in the database at {redact_url(url)}: {reason} "
                          "(check DEBATE_DATABASE_URL)") from None
    return installations, states


def install_stores(settings: BotSettings) -> tuple[AsyncInstallationStore, AsyncOAuthStateStore]:
    """Where installations and OAuth states live: DEBATE_DATABASE_URL's Postgres, or a SQLite file."""
    if settings.debate_database_url:
        return postgres_stores(settings, settings.debate_database_url)
    return sqlite_stores(settings)


def oauth_settings(settings: BotSettings, *, redirect_uri: str | None = None) -> AsyncOAuthSettings:
    installations, states = install_stores(settings)
    return AsyncOAuthSettings(
        client_id=settings.slack_client_id,
        client_secret=settings.slack_client_secret,
        scopes=list(BOT_SCOPES),
        redirect_uri=redirect_uri,
        installation_store=installations,
        state_store=states,
    )
