"""Reading the log never changes it: `debate history`, `show`, `search`, `export` and `discord-sync`, and a
`debate serve` starting up, all as real subprocesses while `debate run` is mid-debate in another one.

The debate is held in its first model call by a gate on the loopback LLM server, so "mid-debate" is an
awaited state, not a timing guess; the gate opens at the end and the debate must complete normally.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from orchestrator.app import runner_name
from tests.cli_harness import debate, two_providers
from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge
from tests.serve_harness import free_port

TOPIC = "Should the ingest queue move to Kafka?"


def debates(db: Path) -> list[dict[str, Any]]:
    """Every `debates` row, read through a read-only connection (this test must not write either)."""
    with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("select * from debates order by created_at")]


@pytest.mark.slow
async def test_reading_commands_and_a_serve_start_leave_a_running_debate_alone(tmp_path: Path) -> None:
    gate = asyncio.Event()
    db = tmp_path / "debates.db"
    async with FakeLLMServer() as srv, DiscordPeer() as discord:
        script_judge(srv, "A", recommendation="Move the ingest queue to Kafka in one region first.")
        srv.add_rule(Reply(gate=gate), match="You open the debate as the proposer", times=1)
        env = two_providers(tmp_path, srv) | {
            "DISCORD_BOT_TOKEN": TOKEN, "DISCORD_API_BASE_URL": discord.api_base_url,
            "DISCORD_GATEWAY_URL": discord.gateway_url,
        }
        run = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bots.cli", "run", TOPIC, "--rounds", "1", cwd=tmp_path, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        try:
            await asyncio.wait_for(srv.wait_for_requests(1), 60)  # logged, and waiting on its first call
            (before,) = debates(db)
            assert before["status"] == "running" and before["runner"].startswith("cli:")
            debate_id = before["id"]

            code, out, err = await debate(tmp_path, "history", "--json", env=env)
            assert code == 0, err
            assert [(r["id"], r["status"]) for r in json.loads(out)["debates"]] == [(debate_id, "running")]
            code, out, err = await debate(tmp_path, "show", debate_id[:6], "--json", env=env)
            assert code == 0 and json.loads(out)["status"] == "running", err
            code, out, err = await debate(tmp_path, "search", "kafka", "--json", env=env)
            assert code == 0 and [h["debate_id"] for h in json.loads(out)] == [debate_id], err
            code, out, err = await debate(tmp_path, "export", debate_id, "--format", "md", env=env)
            assert code == 0 and TOPIC in out, err
            code, out, err = await debate(tmp_path, "discord-sync", "--guild", "123456789012345678", env=env)
            assert code == 0 and "123456789012345678" in out, err

            # a serving process starting now sweeps only debates its own runner left behind
            port = free_port()
            serve = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bots.cli", "serve", "--discord", "--host", "127.0.0.1", "--port", str(port),
                cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
            try:
                await discord.wait_for(lambda: discord.identifies > 0, within=60)
            finally:
                serve.send_signal(signal.SIGTERM)
                _, serve_err = await asyncio.wait_for(serve.communicate(), 60)
            assert serve.returncode == 0, serve_err.decode()[-2000:]

            assert debates(db) == [before]  # nothing any of them did changed the row
            assert not any(c.method == "PATCH" for c in discord.calls)  # no root edited to "interrupted"
        finally:
            gate.set()
        out, err = await asyncio.wait_for(run.communicate(), 120)
    assert run.returncode == 0, err.decode()[-2000:]
    assert "Move the ingest queue to Kafka" in out.decode()
    (after,) = debates(db)
    assert (after["id"], after["status"], after["rounds_completed"]) == (debate_id, "completed", 1)


def test_runner_names_tell_a_serving_host_from_a_cli_process() -> None:
    serve, cli = runner_name("serve"), runner_name("run")
    assert serve is not None and serve.startswith("serve:") and serve == runner_name("serve")
    assert cli is not None and cli.startswith("cli:") and cli.endswith(f":{__import__('os').getpid()}")
    assert runner_name("read") is None


@pytest.mark.slow
async def test_reading_commands_beside_a_live_durable_server_change_nothing(tmp_path: Path) -> None:
    """`debate serve` runs a debate as a workflow (held in its first call); every reading command, as a
    subprocess beside it, leaves the log row and the workflow's row as they were, and the debate ends normally."""
    from tests.durable_serve_harness import command, serving, slack_env, stopped
    from tests.fakes.slack_api import SlackAPIPeer
    from tests.serve_harness import slack_verdict_posted

    gate = asyncio.Event()
    db = tmp_path / "debates.db"
    workflows = tmp_path / "debates.db.workflows.sqlite"
    port = free_port()
    async with FakeLLMServer() as srv, SlackAPIPeer() as slack:
        script_judge(srv, "A", recommendation="Move the ingest queue to Kafka in one region first.")
        srv.add_rule(Reply(gate=gate), match="You open the debate as the proposer", times=1)
        env = slack_env(tmp_path, srv, slack)
        serve = await serving(tmp_path, env, port)
        try:
            await command(port, TOPIC, slack, "trigger-readers-1")
            await asyncio.wait_for(srv.wait_for_requests(1), 60)  # a workflow, waiting on its first call
            (before,) = debates(db)
            debate_id = before["id"]

            def workflow_row() -> tuple[Any, ...]:
                with closing(sqlite3.connect(f"{workflows.resolve().as_uri()}?mode=ro", uri=True)) as conn:
                    return conn.execute("select workflow_uuid, status, executor_id, updated_at from workflow_status"
                                        " where workflow_uuid = ?", [f"debate-{debate_id}"]).fetchone()

            running = workflow_row()
            assert running[1] == "PENDING" and running[2].startswith("serve-")
            for args in (("history", "--json"), ("show", debate_id[:6], "--json"), ("search", "kafka", "--json"),
                         ("export", debate_id, "--format", "md")):
                code, out, err = await debate(tmp_path, *args, env=env)
                assert code == 0, err
                assert debate_id in out or TOPIC in out
                assert "dbos" not in err.lower()
            assert debates(db) == [before] and workflow_row() == running
        finally:
            gate.set()
        try:
            await slack.wait_for(slack_verdict_posted, within=90)
            await slack.wait_for(lambda p: debates(db)[0]["status"] == "completed", within=30)
        finally:
            await stopped(serve)
