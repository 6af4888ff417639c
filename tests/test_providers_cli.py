"""CLI-tool providers as real subprocesses: the fake tools in tests/fakes/cli_bin."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from orchestrator.config import Settings
from orchestrator.providers import ProviderRegistry
from orchestrator.providers.base import Message, ModelCall, ProviderError, ProviderTimeout
from orchestrator.providers.cli_output import parse_claude, parse_codex
from orchestrator.providers.cli_tools import CLIToolProvider, cap_argv_prompt, flatten

TOOLS = ["claude", "gemini", "codex", "opencode", "copilot"]


def cli(**kw: object) -> CLIToolProvider:
    """A provider whose tools get the FAKE_CLI_* script this test set: the minimal environment a tool
    runs with would otherwise drop it, like every variable it was not given."""
    script = {name: value for name, value in os.environ.items() if name.startswith("FAKE_CLI_")}
    return CLIToolProvider(extra_env=script, **kw)  # type: ignore[arg-type]


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


@pytest.mark.slow
@pytest.mark.parametrize("tool", TOOLS)
async def test_each_tool_output_is_parsed(tool: str, fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reply = f"{tool} thinks the proposal holds, because of evidence E."
    monkeypatch.setenv("FAKE_CLI_REPLY", reply)
    provider = cli()
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    result = await provider.complete(call(tool), on_delta)
    assert result.text == reply and deltas == [reply]
    assert result.output_tokens == -(-len(reply) // 4)
    prompt = flatten(call(tool).messages)
    assert result.input_tokens == -(-len(prompt) // 4)
    assert result.duration_ms > 0


@pytest.mark.slow
@pytest.mark.parametrize("tool", TOOLS)
async def test_prompt_arrives(tool: str, fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_ECHO", "1")
    result = await cli().complete(call(tool, last="Concede or rebut: the cache is stale."))
    assert result.text == "Concede or rebut: the cache is stale."


@pytest.mark.slow
async def test_prompt_has_role_headers_and_model_flag(
    fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv("FAKE_CLI_LOG", str(log))
    await cli().complete(call("claude/opus"))
    run = json.loads(log.read_text())
    assert run["argv"] == ["-p", "--output-format", "json", "--model", "opus"]
    assert run["prompt_chars"] == len(flatten(call("claude").messages))
    assert run["cwd"] != os.getcwd()  # each call runs in its own empty directory
    assert flatten(call("x").messages).startswith("[System]\nYou are debater A.\n\n[Assistant]\nMy opening.")


@pytest.mark.slow
async def test_failure_exit_hides_stderr_and_secrets(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", "fail")
    with pytest.raises(ProviderError) as info:
        await cli().complete(call("claude"))
    assert str(info.value) == "cli:claude exited with status 3"
    assert "SECRET" not in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["claude", "gemini", "codex", "opencode"])
async def test_garbage_is_bad_output(tool: str, fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", "garbage")
    with pytest.raises(ProviderError) as info:
        await cli().complete(call(tool))
    assert info.value.kind == "bad_output"
    assert "Segmentation" not in str(info.value)


@pytest.mark.slow
async def test_empty_reply_is_bad_output(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_REPLY", "   ")
    with pytest.raises(ProviderError, match="returned no text"):
        await cli().complete(call("copilot"))


@pytest.mark.slow
async def test_hang_is_killed_on_timeout(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    monkeypatch.setenv("FAKE_CLI_PIDFILE", str(pidfile))
    provider = cli()
    with pytest.raises(ProviderTimeout, match=r"cli:codex timed out after 1 s"):
        await provider.complete(call("codex", timeout_s=1.0))
    pid, child = (int(p) for p in pidfile.read_text().split())
    assert pid == provider.last_pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    assert _gone(child)  # the whole process group went with it


@pytest.mark.slow
async def test_cancellation_kills_the_process(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_MODE", "hang")
    spawned = asyncio.Event()
    provider = cli(on_spawn=lambda pid: spawned.set())
    task = asyncio.create_task(provider.complete(call("gemini")))
    await asyncio.wait_for(spawned.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.last_pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(provider.last_pid, 0)


@pytest.mark.slow
async def test_executable_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.conftest import CLI_BIN

    nightly = tmp_path / "claude-nightly"
    nightly.symlink_to(CLI_BIN / "claude")
    monkeypatch.setenv("FAKE_CLI_REPLY", "from the override")
    monkeypatch.setenv("DEBATE_CLI_CLAUDE", str(nightly))
    result = await cli().complete(call("claude"))
    assert result.text == "from the override"


async def test_missing_executable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("DEBATE_CLI_OPENCODE", raising=False)
    with pytest.raises(ProviderError, match="not found — install it or set DEBATE_CLI_OPENCODE"):
        await cli().complete(call("opencode"))


@pytest.mark.slow
async def test_output_cap(fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLI_REPLY", "x" * 5000)
    with pytest.raises(ProviderError, match="more than") as info:
        await cli(max_output_bytes=1000).complete(call("copilot"))
    assert info.value.kind == "bad_output"


async def test_bad_model_name_is_refused(fake_cli_path: Path) -> None:
    with pytest.raises(ProviderError, match="not valid"):
        await cli().complete(call("claude/--dangerously-skip-permissions"))


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


# ---- the environment a tool runs with ----

VENDOR_KEYS = {"OPENAI_API_KEY": "sk-parent-openai-0123", "ANTHROPIC_API_KEY": "sk-ant-parent-0123",
               "GEMINI_API_KEY": "g-parent-gemini-0123", "OPENROUTER_API_KEY": "sk-or-parent-0123"}
PLATFORM_TOKENS = {"SLACK_BOT_TOKEN": "xoxb-parent-0123", "SLACK_APP_TOKEN": "xapp-parent-0123",
                   "SLACK_SIGNING_SECRET": "parent-signing-0123", "SLACK_CLIENT_SECRET": "parent-client-0123",
                   "DISCORD_BOT_TOKEN": "parent.discord.0123"}
HOST_TOKENS = {"GH_TOKEN": "ghp-parent-0123", "CLAUDE_CONFIG_DIR": "/srv/claude"}
# Which of the variables above each tool may see: its own vendor's key, its own configuration.
OWN = {
    "claude": {"ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR"},
    "gemini": {"GEMINI_API_KEY"},
    "codex": {"OPENAI_API_KEY"},
    "opencode": set(),
    "copilot": {"GH_TOKEN"},
}


@pytest.mark.slow
@pytest.mark.parametrize("tool", TOOLS)
async def test_tool_gets_a_minimal_environment(tool: str, fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the registry, as configured in production: the bot's environment holds every key and token."""
    for name, value in {**VENDOR_KEYS, **PLATFORM_TOKENS, **HOST_TOKENS, "DEBATE_DB": "/srv/debates.db",
                        "LC_ALL": "C.UTF-8", "TERM": "xterm-256color"}.items():
        monkeypatch.setenv(name, value)
    registry = ProviderRegistry(Settings(_env_file=None))  # type: ignore[call-arg]
    provider, model = registry.resolve(f"cli:{tool}/report-env")
    seen = json.loads((await provider.complete(call(model))).text)
    await registry.aclose()

    given = {**VENDOR_KEYS, **HOST_TOKENS}
    assert {name for name in given if name in seen} == OWN[tool]
    assert all(seen[name] == given[name] for name in OWN[tool])
    assert not [name for name in seen if name.startswith(("SLACK_", "DISCORD_"))]
    leaked = set(PLATFORM_TOKENS.values()) | {v for n, v in given.items() if n not in OWN[tool]}
    assert not [name for name, value in seen.items() if any(secret in value for secret in leaked)]
    assert "DEBATE_DB" not in seen
    assert (seen["PATH"], seen["HOME"], seen["LC_ALL"]) == (os.environ["PATH"], os.environ["HOME"], "C.UTF-8")
    assert seen["TERM"] == "dumb"


@pytest.mark.slow
async def test_vendor_key_comes_from_the_settings_only_when_configured(
    fake_cli_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    bare = await cli().complete(call("claude/report-env"))
    assert "ANTHROPIC_API_KEY" not in json.loads(bare.text)  # no settings: no vendor key
    settings = Settings(_env_file=None, ANTHROPIC_API_KEY="sk-ant-from-dotenv-0123")  # type: ignore[call-arg]
    seen = json.loads((await CLIToolProvider(settings=settings).complete(call("claude/report-env"))).text)
    assert seen["ANTHROPIC_API_KEY"] == "sk-ant-from-dotenv-0123" and "ANTHROPIC_BASE_URL" not in seen
