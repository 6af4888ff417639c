"""`debate serve` as an operator runs it serves the debate pages on its own port, beside /healthz: a
real subprocess (Slack HTTP mode against the Slack peer), configured only through the environment."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

import aiohttp
import pytest

from bots.page import page_link
from orchestrator.log import open_log
from tests.cli_harness import clean_env
from tests.fakes.slack_api import SIGNING_SECRET, SlackAPIPeer
from tests.page_harness import PUBLIC_URL, log_debate, settings
from tests.serve_harness import free_port

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


async def answer(url: str, proc: asyncio.subprocess.Process) -> tuple[int, str, dict[str, str]]:
    """GET `url` once the server listens (it does before any platform is up)."""
    async with aiohttp.ClientSession() as http:
        for _ in range(600):
            assert proc.returncode is None, "debate serve exited early"
            with contextlib.suppress(aiohttp.ClientConnectionError):
                async with http.get(url) as response:
                    return response.status, await response.text(), dict(response.headers)
            await asyncio.sleep(0.1)
    raise AssertionError(f"{url} never answered")


async def test_debate_serve_serves_a_debates_page_beside_healthz(tmp_path: Path) -> None:
    secret = "serve-page-secret-0123456789abcdef"
    async with open_log(tmp_path / "debates.db") as store:
        debate = await log_debate(store)
        link = await page_link(store, settings(DEBATE_WEB_SECRET=secret), debate.id)
    assert link is not None
    port = free_port()
    async with SlackAPIPeer() as slack:
        env = clean_env(tmp_path, SLACK_BOT_TOKEN="xoxb-test-token", SLACK_SIGNING_SECRET=SIGNING_SECRET,
                        SLACK_API_BASE_URL=slack.base_url, DEBATE_PUBLIC_URL=PUBLIC_URL, DEBATE_WEB_SECRET=secret)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.cli", "serve", "--front-only", "--host", "127.0.0.1", "--port", str(port),
            cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE)
        try:
            status, html, headers = await answer(link.replace(PUBLIC_URL, f"http://127.0.0.1:{port}"), proc)
            assert status == 200 and debate.topic in html and "Adopt Postgres for the log" in html
            assert headers["Referrer-Policy"] == "no-referrer" and "frame-ancestors 'none'" in \
                headers["Content-Security-Policy"]
            status, body, _ = await answer(f"http://127.0.0.1:{port}/d/{debate.id}/wrong-key", proc)
            assert status == 404 and debate.topic not in body
        finally:  # its graceful stop is tests/test_serve.py's: here it only has to have served
            if proc.returncode is None:
                proc.kill()
            await proc.communicate()
