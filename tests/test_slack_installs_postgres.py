"""Slack installs shared by stateless fronts: two fronts on one Postgres database (DEBATE_DATABASE_URL),
each its own app, as two hosts behind a load balancer run them. A workspace installed through one is
served by the other, an OAuth state issued by one is consumed at the other (once), an uninstall at one
is seen by the other; fronts starting at once create the tables without tripping over each other; and
an unreachable database is one line without the password.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bots.settings import load_settings
from bots.slack.oauth import install_db_path, install_stores
from orchestrator.app import Core
from orchestrator.config import ConfigError
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.front_leases_harness import until
from tests.llm_scripts import script_judge
from tests.slack_transports_harness import forgotten, install, installations, uninstall

pytestmark = pytest.mark.postgres

TEAM = "T9"  # the workspace the Slack peer's oauth.v2.access installs, with xoxb-installed
TABLES = ("slack_bots", "slack_installations", "slack_oauth_states")


def front_settings(tmp_path: Path, peer: SlackAPIPeer, llm: FakeLLMServer, url: str, name: str) -> Any:
    return slack_settings(str(tmp_path / f"{name}.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                          SLACK_BOT_TOKEN=None, SLACK_CLIENT_ID="111.222", SLACK_CLIENT_SECRET="shh-secret",
                          DEBATE_DATABASE_URL=url)


@asynccontextmanager
async def two_fronts(tmp_path: Path, url: str) -> AsyncIterator[tuple[SlackBot, SlackBot, SlackAPIPeer]]:
    """Fronts a and b, each with a DEBATE_DB of its own, and a worker that runs their debates."""
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        async with await Core.open(front_settings(tmp_path, peer, llm, url, "w"), role="worker", name="w1"), \
                SlackBot(front_settings(tmp_path, peer, llm, url, "a"), role="front", name="a") as a, \
                SlackBot(front_settings(tmp_path, peer, llm, url, "b"), role="front", name="b") as b:
            assert installations(a) is not installations(b)
            yield a, b, peer


async def completed(bot: SlackBot, debate_id: str) -> bool:
    record = await bot.core.store.get_debate(debate_id, turns=False)
    return record is not None and record.status == "completed"


async def installed_token(bot: SlackBot) -> str | None:
    found = await installations(bot).async_find_bot(enterprise_id=None, team_id=TEAM)
    return None if found is None else found.bot_token


@pytest.mark.slow
async def test_a_workspace_installed_at_one_front_is_served_and_uninstalled_at_the_other(
    tmp_path: Path, postgres_url: str
) -> None:
    async with two_fronts(tmp_path, postgres_url) as (a, b, peer):
        status, page = await install(a)
        assert status == 200, page
        assert await installed_token(b) == "xoxb-installed"

        status, _ = await b.command("Feature flags or branches? --rounds 1", peer, team=TEAM, channel="C7")
        assert status == 200
        await peer.wait_for(lambda p: p.of("chat.postMessage"))
        root = peer.of("chat.postMessage")[0]
        assert (root.params["token"], root.params["channel"]) == ("xoxb-installed", "C7")
        # the thread is rendered by whichever front holds the workspace's lease, with the token from the database
        debate_id = (await a.core.store.history(1))[0].id
        await until(lambda: completed(a, debate_id))
        await a.settle()
        await b.settle()
        record = await a.core.store.get_debate(debate_id, turns=False)
        assert record is not None and record.thread is not None
        assert [c for c in peer.of("chat.postMessage") if c.params.get("thread_ts") == record.thread]
        assert {c.params["token"] for c in peer.calls if c.method.startswith("chat.")} == {"xoxb-installed"}

        await uninstall(b, TEAM)
        assert await forgotten(a, TEAM) and await installed_token(a) is None
        posted = len(peer.of("chat.postMessage"))
        status, _ = await a.command("Tabs or spaces? --rounds 1", peer, team=TEAM, channel="C7")
        assert status == 200
        await a.settle()
        assert len(peer.of("chat.postMessage")) == posted  # a has no token for the workspace any more
        assert not any(install_db_path(bot.settings).exists() for bot in (a, b))


@pytest.mark.slow
async def test_a_state_issued_at_one_front_is_consumed_at_the_other_and_only_once(
    tmp_path: Path, postgres_url: str
) -> None:
    async with two_fronts(tmp_path, postgres_url) as (a, b, _):
        status, page = await install(a, redirected_to=b)
        assert status == 200, page
        assert await installed_token(a) == "xoxb-installed"

        issuing, consuming = (bot.app.oauth_flow.settings.state_store for bot in (a, b))  # type: ignore[union-attr]
        state = await issuing.async_issue()
        assert await consuming.async_consume(state)
        assert not await issuing.async_consume(state)  # consumed for every front
        assert not await consuming.async_consume("never-issued")


def start_fronts_at_once(settings: Any, count: int) -> list[BaseException]:
    """`count` threads open the install stores at the same moment, as fronts booting together do; what
    they raised."""
    starting = threading.Barrier(count)
    errors: list[BaseException] = []

    def start_front() -> None:
        starting.wait()
        try:
            store, _ = install_stores(settings)
            store.engine.dispose()  # type: ignore[attr-defined]
        except BaseException as error:
            errors.append(error)

    fronts = [threading.Thread(target=start_front) for _ in range(count)]
    for front in fronts:
        front.start()
    for front in fronts:
        front.join()
    return errors


@pytest.mark.slow
def test_fronts_starting_at_once_create_the_install_tables_without_a_duplicate_error(postgres_url: str) -> None:
    """Without the advisory lock, concurrent CREATE TABLEs fail (duplicate table, or the unique index on
    pg_type) in nearly every round."""
    settings = load_settings(DEBATE_DATABASE_URL=postgres_url, SLACK_CLIENT_ID="111.222",
                             SLACK_CLIENT_SECRET="shh-secret")
    for _ in range(3):
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"drop table if exists {', '.join(TABLES)}")
        assert start_fronts_at_once(settings, 6) == []
        with psycopg.connect(postgres_url) as conn:
            found = conn.execute("select tablename from pg_tables where tablename like 'slack%' order by 1")
            assert tuple(row[0] for row in found) == TABLES


def test_an_unreachable_database_is_one_line_without_the_password(caplog: pytest.LogCaptureFixture) -> None:
    url = "postgresql://debate:hunter2-secret@127.0.0.1:9/debates"  # nothing listens on port 9
    settings = load_settings(DEBATE_DATABASE_URL=url, SLACK_CLIENT_ID="111.222", SLACK_CLIENT_SECRET="shh-secret")
    with pytest.raises(ConfigError) as raised:
        install_stores(settings)
    message = str(raised.value)
    assert "\n" not in message and "DEBATE_DATABASE_URL" in message and "debate:***@127.0.0.1:9" in message
    assert "hunter2" not in message and "hunter2" not in caplog.text
