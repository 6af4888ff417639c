"""At rest and at the edge: the installation store's file modes, and Slack's signature checked before
any parsing, over real HTTP into the served aiohttp app."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import sqlite3
import stat
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from slack_sdk.oauth.installation_store import Installation

from bots.settings import load_settings
from bots.slack.oauth import install_db_path, oauth_settings
from bots.slack.routes import OAUTH_PAGE_CSP
from orchestrator.config import Settings
from tests.fakes.slack_api import SIGNING_SECRET, SlackAPIPeer, SlackBot, sign, slack_settings, slash_body

UNUSED_LLM = "http://127.0.0.1:9"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def multi_workspace(tmp_path: Path) -> Settings:
    return load_settings(DEBATE_DB=str(tmp_path / "debates.db"), SLACK_CLIENT_ID="111.222",
                         SLACK_CLIENT_SECRET="shh-secret", SLACK_SIGNING_SECRET=SIGNING_SECRET)


@pytest.mark.parametrize("umask", [0o022, 0o000], indirect=True)
def test_the_installation_store_and_its_journals_are_0600_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    settings = multi_workspace(tmp_path)
    path = install_db_path(settings)
    store = oauth_settings(settings).installation_store
    assert mode(path) == 0o600
    installation = Installation(app_id="A1", team_id="T9", user_id="U1", bot_token="xoxb-installed", bot_id="B1",
                                bot_user_id="UB1", bot_scopes=["commands"], installed_at=time.time())
    store.save(installation)  # type: ignore[attr-defined]
    # SQLite gives its journals the database file's mode: with WAL on, -wal and -shm exist while connected
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        with conn:
            conn.execute("INSERT INTO slack_bots (client_id, app_id, team_id, bot_token, bot_id, bot_user_id, "
                         "installed_at) VALUES ('111.222', 'A1', 'T8', 'xoxb-other', 'B2', 'UB2', 0)")
        siblings = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(path.name))
        assert {path.name + "-wal", path.name + "-shm"} <= set(siblings)
        assert {name: mode(tmp_path / name) for name in siblings} == dict.fromkeys(siblings, 0o600)


def test_an_existing_world_readable_installation_store_is_made_private(tmp_path: Path) -> None:
    settings = multi_workspace(tmp_path)
    path = install_db_path(settings)
    sqlite3.connect(path).close()  # an install made by an older version
    path.chmod(0o644)
    oauth_settings(settings)
    assert mode(path) == 0o600


# ------------------------------------------------------------------------ signature before parsing


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[tuple[SlackBot, SlackAPIPeer]]:
    async with SlackAPIPeer() as peer:
        settings = slack_settings(str(tmp_path / "d.db"), peer, f"{UNUSED_LLM}/v1", UNUSED_LLM)
        async with SlackBot(settings) as b:
            yield b, peer


def signed_bytes(body: bytes, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
MALFORMED: list[tuple[bytes, dict[str, str]]] = [
    (b'{"type": "event_callback", "event": {', JSON),
    (b"{not json", FORM),
    (b"payload=%7Bbroken", FORM),
    (b'payload=%22just+a+string%22', FORM),
    (b"[1, 2, 3]", JSON),
    (b"\xff\xfe\x00not utf-8", FORM),
    (b'{"authorizations": ["x"]}', JSON),
]


async def post(bot: SlackBot, body: bytes, headers: dict[str, str]) -> int:
    async with bot.http.post(f"{bot.url}/slack/events", data=body, headers=headers) as response:
        await response.read()
        return response.status


@pytest.mark.slow
async def test_unsigned_or_forged_requests_get_401_before_any_parsing(
    bot: tuple[SlackBot, SlackAPIPeer], caplog: pytest.LogCaptureFixture
) -> None:
    slack, peer = bot
    caplog.set_level(logging.DEBUG)
    statuses = []
    for body, kind in MALFORMED:
        statuses.append(await post(slack, body, kind))  # no signature at all
        statuses.append(await post(slack, body, kind | signed_bytes(body, "not-the-secret")))
        statuses.append(await post(slack, body, kind | signed_bytes(body, timestamp=1531420618)))  # a replay
        garbled = {"X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": "v0=é"}
        statuses.append(await post(slack, body, kind | garbled))
    assert set(statuses) == {401}
    assert not [r for r in caplog.records if r.exc_info], "a refused request must not log a traceback"
    assert not peer.calls


@pytest.mark.slow
async def test_signed_but_unreadable_bodies_get_400_not_500(
    bot: tuple[SlackBot, SlackAPIPeer], caplog: pytest.LogCaptureFixture
) -> None:
    slack, peer = bot
    caplog.set_level(logging.DEBUG)
    statuses = [await post(slack, body, kind | signed_bytes(body)) for body, kind in MALFORMED]
    assert all(400 <= s < 500 for s in statuses), statuses
    assert not [r for r in caplog.records if r.exc_info]
    assert not peer.calls


@pytest.mark.slow
async def test_a_get_with_a_body_to_the_install_page_is_not_parsed(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer:
        settings = slack_settings(str(tmp_path / "d.db"), peer, f"{UNUSED_LLM}/v1", UNUSED_LLM, SLACK_BOT_TOKEN=None,
                                  SLACK_CLIENT_ID="111.222", SLACK_CLIENT_SECRET="shh-secret")
        async with SlackBot(settings) as slack:
            async with slack.http.get(f"{slack.url}/slack/install", data=b"{broken", headers=JSON) as page:
                assert page.status == 200


@pytest.mark.slow
async def test_the_install_pages_carry_the_security_headers_and_a_csp_their_html_needs(tmp_path: Path) -> None:
    """bolt's install page has an inline style and Slack's button image: its CSP allows those, nothing else."""
    async with SlackAPIPeer() as peer:
        settings = slack_settings(str(tmp_path / "d.db"), peer, f"{UNUSED_LLM}/v1", UNUSED_LLM, SLACK_BOT_TOKEN=None,
                                  SLACK_CLIENT_ID="111.222", SLACK_CLIENT_SECRET="shh-secret")
        async with SlackBot(settings) as slack:
            for path in ("/slack/install", "/slack/oauth_redirect?error=access_denied"):
                async with slack.http.get(f"{slack.url}{path}") as page:
                    assert page.status in (200, 400), path
                    csp = page.headers["Content-Security-Policy"]
                    assert csp == OAUTH_PAGE_CSP and "script-src" not in csp, path
                    assert page.headers["X-Content-Type-Options"] == "nosniff"
                    assert page.headers["Cache-Control"] == "no-store"
                    html = await page.text()
                    assert "<style>" in html, path


@pytest.mark.slow
async def test_a_signed_well_formed_request_still_works(bot: tuple[SlackBot, SlackAPIPeer]) -> None:
    slack, peer = bot
    body = slash_body("help", response_url=peer.response_url())
    async with slack.http.post(f"{slack.url}/slack/events", data=body, headers=FORM | sign(SIGNING_SECRET, body)) as r:
        assert r.status == 200
