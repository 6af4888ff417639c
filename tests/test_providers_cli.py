"""CLI-tool providers as real subprocesses: the fake tools in tests/fakes/cli_bin."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from orchestrator.providers.base import Message, ModelCall, ProviderError, ProviderTimeout
from orchestrator.providers.cli_tools import (
    CLIToolProvider,
    cap_argv_prompt,
    flatten,
    parse_claude,
    parse_codex,
)

TOOLS = ["claude", "gemini", "codex", "opencode", "copilot"]


def call(model: str, last: str = "Defend your position in one line.", **kw: object) -> ModelCall:
    messages = (
        Message(role="system", content="You are debater A."),
        Message(role="assistant", content="My opening."),
        Message(role="user", content=f"The challenger says X.\n{last}"),
    )
    return ModelCall(model=model, messages=messages, **kw)  # type: ignore[arg-type]


def _gone(pid: int) -> bool:
    """True when the process no longer runs (a zombie not yet reaped by init counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (FileNotFoundError, IndexError):
        return True


@pytest.mark.parametrize("tool", TOOLS)
async def test_each_tool_output_is_parsed(tool: str, fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reply = f"{tool} thinks the proposal holds, because of evidence E."
    monkeypatch.setenv("FAKE_CLI_REPLY", reply)
    provider = CLIToolProvider()
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    result = await provider.complete(call(tool), on_delta)
    assert result.text == reply and deltas == [reply]
    assert result.output_tokens == -(-len(reply) // 4)
    prompt = flatten(call(tool).messages)
    assert result.input_tokens == -(-len(prompt) // 4)
    assert result.duration_ms > 0


@pytest.mark.parametrize("tool", TOOLS)
async def test_prompt_arrives(tool: str, fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_ECHO", "1")
    result = await CLIToolProvider().complete(call(tool, last="Concede or rebut: the cache is stale."))
    assert result.text == "Concede or rebut: the cache is stale."


async def test_prompt_has_role_headers_and_model_flag(
    fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_CLI_LOG", str(log))
    await CLIToolProvider().complete(call("claude/opus"))
    run = json.loads(log.read_text())
    assert run["argv"] == ["-p", "--output-format", "json", "--model", "opus"]
    assert run["prompt_chars"] == len(flatten(call("claude").messages))
    assert run["cwd"] != os.getcwd()  # each call runs in its own empty directory
    assert flatten(call("x").messages).startswith("[System]\nYou are debater A.\n\n[Assistant]\nMy opening.")


async def test_failure_exit_hides_stderr_and_secrets(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", "fail")
    with pytest.raises(ProviderError) as info:
        await CLIToolProvider().complete(call("claude"))
    assert str(info.value) == "cli:claude exited with status 3"
    assert "SECRET" not in str(info.value)


@pytest.mark.parametrize("tool", ["claude", "gemini", "codex", "opencode"])
async def test_garbage_is_bad_output(tool: str, fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", "garbage")
    with pytest.raises(ProviderError) as info:
        await CLIToolProvider().complete(call(tool))
    assert info.value.kind == "bad_output"
    assert "Segmentation" not in str(info.value)


async def test_empty_reply_is_bad_output(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_REPLY", "   ")
    with pytest.raises(ProviderError, match="returned no text"):
        await CLIToolProvider().complete(call("copilot"))


async def test_hang_is_killed_on_timeout(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    monkeypatch.setenv("FAKE_CLI_PIDFILE", str(pidfile))
    provider = CLIToolProvider()
    with pytest.raises(ProviderTimeout, match=r"cli:codex timed out after 1 s"):
        await provider.complete(call("codex", timeout_s=1.0))
    pid, child = (int(p) for p in pidfile.read_text().split())
    assert pid == provider.last_pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    assert _gone(child)  # the whole process group went with it


async def test_cancellation_kills_the_process(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    spawned = asyncio.Event()
    provider = CLIToolProvider(on_spawn=lambda pid: spawned.set())
    task = asyncio.create_task(provider.complete(call("gemini")))
    await asyncio.wait_for(spawned.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.last_pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(provider.last_pid, 0)


async def test_executable_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.conftest import CLI_BIN

    nightly = tmp_path / "claude-nightly"
    nightly.symlink_to(CLI_BIN / "claude")
    monkeypatch.setenv("FAKE_CLI_REPLY", "from the override")
    monkeypatch.setenv("DEBATE_CLI_CLAUDE", str(nightly))
    result = await CLIToolProvider().complete(call("claude"))
    assert result.text == "from the override"


async def test_missing_executable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("DEBATE_CLI_OPENCODE", raising=False)
    with pytest.raises(ProviderError, match="not found — install it or set DEBATE_CLI_OPENCODE"):
        await CLIToolProvider().complete(call("opencode"))


async def test_output_cap(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_REPLY", "x" * 5000)
    with pytest.raises(ProviderError, match="more than") as info:
        await CLIToolProvider(max_output_bytes=1000).complete(call("copilot"))
    assert info.value.kind == "bad_output"


async def test_bad_model_name_is_refused(fake_cli_path: Path) -> None:
    with pytest.raises(ProviderError, match="not valid"):
        await CLIToolProvider().complete(call("claude/--dangerously-skip-permissions"))


def test_argv_prompt_is_capped_keeping_both_ends() -> None:
    prompt = "INSTRUCTIONS " + "é" * 200_000 + " THE ASK"
    capped = cap_argv_prompt(prompt)
    assert len(capped.encode()) <= 100_000
    assert capped.startswith("INSTRUCTIONS") and capped.endswith("THE ASK") and "omitted" in capped


def test_parsers_handle_real_variants() -> None:
    verbose = json.dumps([{"type": "system"}, {"type": "result", "result": "ok", "usage": {"input_tokens": 3}}])
    assert parse_claude(verbose).text == "ok"
    assert parse_claude('warning: update available\n{"result": "hi", "usage": {}}').text == "hi"
    lines = "\n".join(
        json.dumps(e)
        for e in [
            {"type": "item.completed", "item": {"type": "agent_message", "text": "first"}},
            {"type": "item.completed", "item": {"type": "agent_message", "text": "final"}},
        ]
    )
    assert parse_codex(lines).text == "final"
