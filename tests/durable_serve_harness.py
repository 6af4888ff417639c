"""What test_durable_serve.py shares with other test modules, moved here so that no test module imports another:
`OPENING`, `assert_each_message_once`, `command`, `rows`, `serving`, `slack_env`, `spawn`, `stopped`, `until`."""

from __future__ import annotations

import asyncio
import inspect
import signal
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import aiohttp

from tests.cli_harness import clean_env
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SIGNING_SECRET, SlackAPIPeer, sign, slash_body
from tests.serve_harness import health_until

OPENING = "You open the debate as the proposer"


def rows(db: Path) -> list[dict[str, Any]]:
    with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("select * from debates order by created_at")]


def assert_each_message_once(peer: SlackAPIPeer, channel: str, root_ts: str, db: Path, debate_id: str) -> None:
    """Every turn, notice and verdict in the thread once: one post per recorded message key, each final."""
    with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        recorded = dict(conn.execute("select key, message_id from messages where debate_id = ?", [debate_id]))
        finals = [k for (k,) in conn.execute("select key from messages where debate_id = ? and final = 0",
                                             [debate_id])]
        turns = conn.execute("select round, seat, kind from turns where debate_id = ?", [debate_id]).fetchall()
    thread = peer.thread(channel, root_ts)
    assert sorted(m.ts for m in thread) == sorted(v for k, v in recorded.items() if k != "root")
    assert not finals, finals
    assert len(turns) == len(set(turns)) >= 2
    texts = Counter(m.markdown or m.text for m in thread)  # a native stream has no `text`
    assert max(texts.values()) == 1, texts.most_common(2)


async def until(predicate: Callable[[], object], within: float = 30.0) -> None:
    """Poll a state this process changes from another task (no event to await)."""
    deadline = time.monotonic() + within
    while not _checked(predicate()):
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def _checked(value: object) -> object:
    """A predicate's answer; an awaitable is always truthy, so a coroutine function passed by mistake
    would pass at once without waiting."""
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise TypeError("until() takes a plain predicate, not a coroutine function")
    return value


def slack_env(tmp_path: Path, llm: FakeLLMServer, slack: SlackAPIPeer, **extra: str) -> dict[str, str]:
    return clean_env(
        tmp_path,
        OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=llm.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test-key-123456", ANTHROPIC_BASE_URL=llm.anthropic_base_url,
        SLACK_BOT_TOKEN="xoxb-test-token", SLACK_SIGNING_SECRET=SIGNING_SECRET, SLACK_API_BASE_URL=slack.base_url,
        DEBATE_ROUNDS="1", **extra,
    )


async def spawn(tmp_path: Path, env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots.cli", *args, cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )


async def serving(tmp_path: Path, env: dict[str, str], port: int, *extra: str) -> asyncio.subprocess.Process:
    proc = await spawn(tmp_path, env, "serve", "--slack", "--host", "127.0.0.1", "--port", str(port), *extra)
    try:
        await health_until(f"http://127.0.0.1:{port}/healthz", proc, 200)
    except BaseException:
        proc.kill()
        raise
    return proc


async def command(port: int, text: str, slack: SlackAPIPeer, trigger: str) -> None:
    body = slash_body(text, channel="C7", trigger=trigger, response_url=slack.response_url())
    headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SIGNING_SECRET, body)}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"http://127.0.0.1:{port}/slack/events", data=body, headers=headers) as response:
            assert response.status == 200


async def stopped(proc: asyncio.subprocess.Process, within: float = 60) -> str:
    """SIGTERM, then the exit status must be 0; returns stderr."""
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), within)
    assert proc.returncode == 0, err.decode()[-3000:]
    return err.decode()
