"""`debate` as users run it: a real subprocess, the real SDKs, the fake LLM server, a real SQLite file."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pytest
import sqlite_utils

from orchestrator.config import Settings
from tests.cli_harness import PROVIDER_VARS, ROOT, clean_env, debate, two_providers
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


async def test_run_streams_a_cross_family_debate_and_logs_it(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "B", recommendation="Pilot Go on the ingest path only.")
        env = two_providers(tmp_path, srv)
        code, out, err = await debate(tmp_path, "run", "Should we rewrite ingest in Go?", env=env)
        assert code == 0, err
        assert "Round 1 of 2" in out and "Round 2 of 2" in out
        assert "Pilot Go on the ingest path only." in out
        apis = {r.api for r in srv.requests}
        assert apis == {"openai", "anthropic"}, "two model families should debate"
        debaters = [r for r in srv.requests if "impartial judge" not in r.messages[0]["content"]]
        assert len(debaters) == 4

    db = sqlite_utils.Database(tmp_path / "debates.db")
    (row,) = list(db["debates"].rows)
    assert row["status"] == "completed" and row["rounds_completed"] == 2
    assert {s["role"] for s in db["seats"].rows} == {"proposer", "challenger"}
    turns = list(db["turns"].rows_where(order_by="id"))
    assert [t["kind"] for t in turns] == ["opening", "challenge", "defense", "follow-up"]
    assert all(t["input_tokens"] > 0 and t["output_tokens"] > 0 for t in turns)
    (verdict,) = list(db["verdicts"].rows)
    assert verdict["winner"] == "B" and verdict["recommendation"] == "Pilot Go on the ingest path only."


async def test_run_json_prints_only_the_export(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        code, out, _ = await debate(tmp_path, "run", "Tabs or spaces?", "--rounds", "1", "--json",
                                    env=two_providers(tmp_path, srv))
    assert code == 0
    data = json.loads(out)
    for key in ("id", "topic", "proposer", "challenger", "effort", "rounds_completed", "max_rounds", "status",
                "exchanges", "verdict", "timestamp"):
        assert key in data, key
    assert data["topic"] == "Tabs or spaces?" and data["rounds_completed"] == 1
    assert [e["role"] for e in data["exchanges"]] == ["proposer", "challenger"]
    assert data["verdict"]["winner_label"] == "A" and data["verdict"]["winner"] == data["proposer"]


async def test_recall_commands_after_a_run(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A", recommendation="Use PostgreSQL advisory locks for the scheduler.")
        env = two_providers(tmp_path, srv)
        code, out, _ = await debate(tmp_path, "run", "Which lock for the scheduler?", "--rounds", "1", "--json",
                                    env=env)
        debate_id = json.loads(out)["id"]
    code, out, _ = await debate(tmp_path, "history", env=env)
    assert code == 0 and debate_id in out and "Which lock" in out
    code, out, _ = await debate(tmp_path, "search", "advisory locks", "--json", env=env)
    assert code == 0 and json.loads(out)[0]["debate_id"] == debate_id
    code, out, _ = await debate(tmp_path, "search", 'AND (cats "', env=env)
    assert code == 0 and "No matches" in out
    code, out, _ = await debate(tmp_path, "show", debate_id[:6], env=env)
    assert code == 0 and "advisory locks" in out
    target = tmp_path / "out.md"
    code, _, _ = await debate(tmp_path, "export", debate_id, "--format", "md", "-o", str(target), env=env)
    assert code == 0 and "Which lock for the scheduler?" in target.read_text()
    code, _, err = await debate(tmp_path, "show", "ffffffff", env=env)
    assert code == 2 and "no debate" in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "   "], "topic is empty"),
        (["run", "x" * 4001], "limit is 4,000"),
        (["run", "Topic", "--proposer", "bogus:model"], "valid providers"),
        (["run", "Topic", "--proposer", "no-colon"], "provider:model"),
        (["run", "Topic", "--proposer", "anthropic:claude-sonnet-4-5", "--challenger", "openai:gpt-5"],
         "ANTHROPIC_API_KEY"),
    ],
)
async def test_bad_usage_exits_2_with_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    code, out, err = await debate(tmp_path, *args, env=clean_env(tmp_path))
    assert code == 2
    assert needle in err
    assert "Traceback" not in err and out == ""


async def test_no_provider_configured_says_what_to_set(tmp_path: Path) -> None:
    code, _, err = await debate(tmp_path, "run", "Anything?", env=clean_env(tmp_path))
    assert code == 2
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OLLAMA_BASE_URL", "local:smollm2-135m"):
        assert variable in err
    assert len(err.strip().splitlines()) == 1  # one line; and no model was started that nobody asked for


async def test_demo_without_credentials_runs_the_local_model_after_saying_what_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """The demo's choice with nothing configured (the debate itself on the real model: tests/test_real_model.py)."""
    from bots.cli import demo as demo_module

    asked: list[argparse.Namespace] = []

    async def runner(args: argparse.Namespace, _settings: Settings) -> int:
        print("-- the debate runs here --")
        asked.append(args)
        return 0

    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    settings = Settings(_env_file=None, DEBATE_DB=str(tmp_path / "d.db"))  # type: ignore[call-arg]
    monkeypatch.setattr(demo_module, "local_ready", lambda: True)
    assert await demo_module.demo(argparse.Namespace(), settings, runner) == 0
    out = capsys.readouterr().out
    notice, _, after = out.partition("-- the debate runs here --")
    assert "135M-parameter" in notice and "on this machine" in notice and "weak arguments" in notice
    assert "ANTHROPIC_API_KEY" in notice and after.strip() == ""  # said before the debate starts
    (args,) = asked
    assert (args.proposer, args.challenger, args.judge, args.rounds) == ("local:smollm2-135m",) * 3 + ("1",)

    monkeypatch.setattr(demo_module, "local_ready", lambda: False)  # the extra not installed: what to set, or make demo
    assert await demo_module.demo(argparse.Namespace(), settings, runner) == 0
    out = capsys.readouterr().out
    assert "ANTHROPIC_API_KEY" in out and "make demo" in out and len(asked) == 1


async def test_demo_with_one_provider_says_both_seats_use_it(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        env = clean_env(tmp_path, OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=srv.openai_base_url)
        code, out, err = await debate(tmp_path, "demo", env=env)
    assert code == 0, err
    assert "every seat uses openai:gpt-5" in out  # one provider: both seats share its default model
    assert "Verdict" in out


async def test_malformed_setting_is_one_line(tmp_path: Path) -> None:
    code, _, err = await debate(tmp_path, "history", env=clean_env(tmp_path, DEBATE_ROUNDS="nine"))
    assert code == 2 and "DEBATE_ROUNDS" in err and "Traceback" not in err


async def test_proposer_failure_exits_1_with_a_clear_message(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        srv.add_rule(Reply(status=500), match="You open the debate as the proposer")
        code, _, err = await debate(tmp_path, "run", "Will it fail?", env=two_providers(tmp_path, srv))
    assert code == 1
    assert "proposer" in err and "failed in round 1" in err
    assert "sk-test" not in err


async def test_the_operator_may_seat_a_cli_tool_that_chat_may_not(tmp_path: Path) -> None:
    """The chat policy keeps `cli:` tools from Slack and Discord; the CLI on the host is the operator."""
    bin_dir, ran = tmp_path / "bin", tmp_path / "tools-ran"
    bin_dir.mkdir()
    wrapper = bin_dir / "opencode"
    wrapper.write_text(f'#!/bin/sh\necho opencode >> "{ran}"\n'
                       f'exec "{sys.executable}" "{ROOT / "tests" / "fakes" / "cli_bin" / "opencode"}" "$@"\n')
    wrapper.chmod(0o755)
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        env = two_providers(tmp_path, srv)
        env["PATH"] = str(bin_dir) + os.pathsep + env["PATH"]
        code, _, err = await debate(tmp_path, "run", "Tabs or spaces?", "--rounds", "1", "--proposer", "cli:opencode",
                                    "--challenger", "openai:gpt-5", env=env)
    assert code == 0, err
    assert ran.read_text().split() == ["opencode"]
