"""Durable debates through the product's own doors: `debate serve` (front and worker in one process),
`debate serve --front-only` beside `debate worker`, restarts, redelivered requests and SIGTERM, against
the loopback Slack and Discord peers and the scripted LLM server.

In-process tests run a front and worker on one Core (DBOS is a process-wide singleton: one launched
Core at a time); the operator-facing ones run `python -m bots.cli …` as real subprocesses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from orchestrator.app import RESTARTING, Core
from tests.discord_harness import connected
from tests.durable_serve_harness import (
    OPENING,
    assert_each_message_once,
    command,
    rows,
    serving,
    slack_env,
    spawn,
    stopped,
    until,
)
from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings, slash_body
from tests.llm_scripts import script_judge
from tests.serve_harness import free_port, health_until, slack_verdict_posted

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


def thread_finished(db: Path) -> bool:
    """The log's only debate has ended and its thread shows it: every message recorded, the root last, final
    (what a front records once the root's status shows the end, after the verdict's post and edits)."""
    (row,) = rows(db)
    with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        keys = dict(conn.execute("select key, final from messages where debate_id = ?", [row["id"]]).fetchall())
    return row["status"] == "completed" and keys.get("root") == 1 and all(keys.values())


def slack_roots(peer: SlackAPIPeer) -> list[Any]:
    return [m for m in peer.messages.values() if m.thread_ts is None]


def ephemeral(peer: SlackAPIPeer) -> list[str]:
    return [str(c.params.get("text", "")) for c in peer.of("response_url")
            if c.params.get("response_type") == "ephemeral"]


# -- in process: a retried request after a restart -----------------------------------------------------


async def test_a_slack_retry_after_a_restart_starts_nothing_new(tmp_path: Path) -> None:
    gate = asyncio.Event()
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        llm.add_rule(Reply(text="Opening, held across the restart.", gate=gate), match=OPENING)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  DEBATE_ROUNDS=1)
        body = slash_body("Monorepo or polyrepo?", trigger="trigger-restart-1", response_url=peer.response_url())
        async with SlackBot(settings, grace_s=0.2) as bot:
            status, _ = await bot.post(body)
            assert status == 200
            await llm.wait_for_requests(1)  # admitted, root posted, queued, and its first call in flight
            (debate_id,) = bot.running()
        # the process stopped with the call in flight: nothing was failed
        (row,) = rows(tmp_path / "d.db")
        assert row["status"] == "running" and row["error"] is None

        async with SlackBot(settings) as bot:
            assert bot.resumed == [debate_id]  # the thread is picked up where it was
            status, _ = await bot.post(body, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "timeout"})
            assert status == 200
            gate.set()
            await bot.settle()
        (row,) = rows(tmp_path / "d.db")
        assert (row["id"], row["status"]) == (debate_id, "completed")
        (root,) = slack_roots(peer)
        assert row["thread"] == root.ts
        assert_each_message_once(peer, "C1", root.ts, tmp_path / "d.db", debate_id)


async def test_a_discord_interaction_delivered_again_after_a_restart_starts_nothing_new(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from bots.settings import load_settings

    caplog.set_level(logging.INFO, logger="bots.discord.commands")

    async with DiscordPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm)
        settings = load_settings(
            DEBATE_DB=str(tmp_path / "d.db"), DEBATE_MAX_RETRIES=0, DEBATE_ROUNDS=1,
            OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=llm.openai_base_url,
            ANTHROPIC_API_KEY="sk-ant-test-key-123456", ANTHROPIC_BASE_URL=llm.anthropic_base_url,
            DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url)
        payload = peer.slash_command("debate", {"topic": "Tabs or spaces?"})
        async with await Core.open(settings) as core, connected(core) as bot:
            await peer.dispatch_interaction(payload)
            await until(lambda: bot.output.tailer is not None and bot.output.tailer.following)
            await bot.output.rendered()
        calls = len(llm.requests)

        async with await Core.open(settings) as core, connected(core) as bot:
            await peer.dispatch_interaction(payload)  # the gateway delivers the same interaction again
            await until(lambda: any("delivered again" in r.getMessage() for r in caplog.records))
            await bot.output.rendered()
            history = await core.store.history(10)
        assert [(d.status, d.platform) for d in history] == [("completed", "discord")]
        assert len(peer.threads()) == 1 and len(llm.requests) == calls
        assert peer.interactions[payload["id"]].answers == []  # the repeat was not answered a second time


# -- subprocesses: SIGTERM, and a front and a worker apart ---------------------------------------------


async def test_sigterm_fails_nothing_and_a_relaunch_finishes_the_debate(tmp_path: Path) -> None:
    gate = asyncio.Event()
    port = free_port()
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack:
        script_judge(llm, "A")
        llm.add_rule(Reply(text="Opening that finishes during the graceful stop.", gate=gate), match=OPENING,
                     times=1)
        env = slack_env(tmp_path, llm, slack)
        first = await serving(tmp_path, env, port)
        try:
            await command(port, "Monorepo or polyrepo?", slack, "trigger-sigterm-1")
            await asyncio.wait_for(llm.wait_for_requests(1), 60)  # the opening call is in flight
            first.send_signal(signal.SIGTERM)
            stopping = await health_until(f"http://127.0.0.1:{port}/healthz", first, 503)
            assert stopping["status"] == "stopping"
            await command(port, "Tabs or spaces?", slack, "trigger-sigterm-2")  # refused while stopping
            await slack.wait_for(lambda p: any(RESTARTING in t for t in ephemeral(p)), within=30)
            gate.set()  # the call in flight finishes within the grace period, and is recorded
            await stopped(first)
        finally:
            if first.returncode is None:
                first.kill()
        (row,) = rows(tmp_path / "debates.db")
        assert row["status"] == "running" and row["error"] is None  # nothing marked failed
        opening_calls = len([r for r in llm.requests if OPENING in r.last_user])

        again = await serving(tmp_path, env, port)
        try:
            await slack.wait_for(slack_verdict_posted, within=90)
            # the thread finished (its root recorded final), not only the verdict posted: a SIGTERM before it
            # leaves the root's last edit to the next start, which resumes the thread
            await until(lambda: thread_finished(tmp_path / "debates.db"), within=90)
        finally:
            await stopped(again)
    assert len([r for r in llm.requests if OPENING in r.last_user]) == opening_calls == 1  # not called again
    (row,) = rows(tmp_path / "debates.db")
    (root,) = slack_roots(slack)
    assert_each_message_once(slack, "C7", root.ts, tmp_path / "debates.db", row["id"])


async def test_a_front_and_a_worker_in_separate_processes_complete_a_slack_debate(tmp_path: Path) -> None:
    port = free_port()
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack:
        script_judge(llm, "A")
        env = slack_env(tmp_path, llm, slack)
        front = await serving(tmp_path, env, port, "--front-only")
        worker_port = free_port()
        worker = await spawn(tmp_path, env, "worker", "--name", "w1", "--concurrency", "2",
                             "--host", "127.0.0.1", "--port", str(worker_port))
        try:
            assert worker.stderr is not None
            line = await asyncio.wait_for(worker.stderr.readline(), 60)
            assert b"worker worker-w1 running" in line, line
            await health_until(f"http://127.0.0.1:{worker_port}/healthz", worker, 200)  # a worker answers too
            await command(port, "Monorepo or polyrepo?", slack, "trigger-apart-1")
            await slack.wait_for(slack_verdict_posted, within=90)
            await until(lambda: thread_finished(tmp_path / "debates.db"), within=90)
        finally:
            with contextlib.suppress(AssertionError):
                await stopped(worker)
            front_err = await stopped(front)
    assert "front only" in front_err
    assert worker.returncode == 0
    (row,) = rows(tmp_path / "debates.db")
    (root,) = slack_roots(slack)
    assert (row["status"], row["thread"]) == ("completed", root.ts)
    assert_each_message_once(slack, "C7", root.ts, tmp_path / "debates.db", row["id"])
