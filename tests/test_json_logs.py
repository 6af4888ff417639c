"""DEBATE_LOG_FORMAT=json: a real `debate serve` logs one JSON object a line on stderr, with the fields a
log collector indexes, and no secret in any of them; the default stays readable text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.durable_serve_harness import command, serving, slack_env, stopped
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer
from tests.llm_scripts import script_judge
from tests.metrics_harness import CHALLENGE, completed
from tests.serve_harness import free_port

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

FIELDS = {"time", "level", "logger", "message", "debate_id", "workspace", "role", "process"}
SECRETS = ("sk-test-openai-key", "sk-ant-test-key-123456", "xoxb-test-token")


async def test_serve_logs_one_json_object_a_line_with_its_role_and_no_secret(tmp_path: Path) -> None:
    port = free_port()
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack:
        script_judge(llm, "A")
        # a failing call whose error text carries a key: the log line about it must not
        llm.add_rule(Reply(status=500, text="upstream said sk-test-openai-key is bad"), match=CHALLENGE, times=1)
        env = slack_env(tmp_path, llm, slack, DEBATE_LOG_FORMAT="json")
        proc = await serving(tmp_path, env, port, "--name", "front-a")
        try:
            await command(port, "Monorepo or polyrepo?", slack, "trigger-json-logs-1")
            await completed(tmp_path / "debates.db", slack)
        finally:
            err = await stopped(proc)

    lines = [line for line in err.splitlines() if line.strip()]
    assert lines, "serve logs at least its start and stop at INFO in json"
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    for record in records:
        assert set(record) >= FIELDS, record
        assert record["role"] == "serve" and record["process"] == "front-a"
        assert record["level"] in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
    assert not any(secret in err for secret in SECRETS)
    assert any(r["level"] == "INFO" for r in records)
    assert any(r["message"] == "event loop: uvloop" for r in records), "serve runs on uvloop by default"


async def test_the_default_log_is_readable_text(tmp_path: Path) -> None:
    port = free_port()
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack:
        proc = await serving(tmp_path, slack_env(tmp_path, llm, slack), port)
        err = await stopped(proc)
    assert err.strip() and not err.lstrip().startswith("{")
