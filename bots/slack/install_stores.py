"""Where a multi-workspace install keeps its installations and OAuth states: slack_sdk's SQLite stores
(one file beside the debate log) or its SQLAlchemy stores on the log's Postgres database, which every
front behind a load balancer shares.

Both kinds do their I/O inline, even in the `async_*` methods bolt calls (the SQLite ones' and the
base class's `async_delete_all`, called on app_uninstalled, fall back to the blocking deletes): the
mixins here run every store operation in a worker thread instead.

On Postgres, the tables (slack_installations, slack_bots, slack_oauth_states: slack_sdk's defaults,
which the log's schema does not use) are created under an advisory lock, so fronts starting at once do
not race in CREATE TABLE; a state is consumed by one atomic DELETE, so two fronts cannot both accept it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import psycopg
import sqlalchemy
from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.installation_store import InstallationStore
from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore
from slack_sdk.oauth.installation_store.sqlite3 import SQLite3InstallationStore
from slack_sdk.oauth.sqlalchemy_utils import normalize_datetime_for_db
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from slack_sdk.oauth.state_store.sqlalchemy import SQLAlchemyOAuthStateStore
from slack_sdk.oauth.state_store.sqlite3 import SQLite3OAuthStateStore
from slack_sdk.oauth.state_store.state_store import OAuthStateStore

log = logging.getLogger("bots.slack")

CONNECT_TIMEOUT_S = 10
# each store call is one or two short queries (a Slack request's authorization, an install, a state):
# two kept open, up to six at a burst, counted in deploy/README.md's connections per front
POOL_SIZE, POOL_OVERFLOW = 2, 4
TABLES_LOCK = 0x6465_6261_7465_736B  # any fixed bigint, distinct from the log's migration and admission locks


class ThreadedInstallations(InstallationStore, AsyncInstallationStore):
    """bolt's async calls, each run in a worker thread over the blocking method of the store it is mixed
    into (put it first among the bases). `saved`, when set, hears of each install saved (a reinstall keeps
    a workspace's data: bots/slack/listeners/uninstall.py)."""

    saved: Callable[[Installation], Awaitable[None]] | None = None

    async def async_save(self, installation: Installation) -> None:
        await asyncio.to_thread(self.save, installation)
        if self.saved is not None:
            await self.saved(installation)

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


class ThreadedStates(OAuthStateStore, AsyncOAuthStateStore):
    async def async_issue(self, *args: object, **kwargs: object) -> str:
        return await asyncio.to_thread(self.issue, *args, **kwargs)

    async def async_consume(self, state: str) -> bool:
        return await asyncio.to_thread(self.consume, state)


class AsyncSQLiteInstallationStore(ThreadedInstallations, SQLite3InstallationStore):
    """Installations in the SQLite file beside the debate log."""


class AsyncSQLiteStateStore(ThreadedStates, SQLite3OAuthStateStore):
    """OAuth states in the SQLite file beside the debate log."""


class PostgresInstallationStore(ThreadedInstallations, SQLAlchemyInstallationStore):
    """Installations in the log's Postgres database, shared by every front."""


class PostgresStateStore(ThreadedStates, SQLAlchemyOAuthStateStore):
    def consume(self, state: str) -> bool:
        """One DELETE … RETURNING: of two fronts consuming the same state at once, only one gets it
        (slack_sdk's select-then-delete lets both through)."""
        c = self.oauth_states.c
        now = normalize_datetime_for_db(datetime.now(tz=UTC))
        try:
            with self.engine.begin() as conn:
                taken = conn.execute(self.oauth_states.delete().where(c.state == state, c.expire_at > now)
                                     .returning(c.id))
                return taken.first() is not None
        except sqlalchemy.exc.SQLAlchemyError as error:  # as slack_sdk's: the flow answers "invalid state"
            log.warning("could not consume an OAuth state: %s", type(error).__name__)
            return False


def postgres_engine(url: str) -> sqlalchemy.Engine:
    """A SQLAlchemy engine (psycopg 3) whose connections psycopg opens from `url` itself, exactly as the
    log's do (libpq URL syntax: several hosts, sslmode, socket directories), so the engine's own URL,
    the one SQLAlchemy shows in logs and errors, never holds the password."""
    return sqlalchemy.create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S),
        pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW,
        pool_pre_ping=True,  # a connection the server dropped (restart, failover) is replaced, not used
    )


def create_postgres_tables(engine: sqlalchemy.Engine, *metadata: sqlalchemy.MetaData) -> None:
    """CREATE what is missing, in one transaction under an advisory lock: a front starting beside
    another waits for the other's tables instead of failing on a duplicate."""
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("select pg_advisory_xact_lock(:key)"), {"key": TABLES_LOCK})
        for tables in metadata:
            tables.create_all(conn)
