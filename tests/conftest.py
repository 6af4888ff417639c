"""Shared fixtures: loopback protocol peers and fake tools."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer

CLI_BIN = Path(__file__).parent / "fakes" / "cli_bin"


@pytest.fixture
async def llm_server() -> AsyncIterator[FakeLLMServer]:
    """An OpenAI-/Anthropic-compatible server on 127.0.0.1 (openai_base_url, anthropic_base_url)."""
    async with FakeLLMServer() as server:
        yield server


@pytest.fixture
def fake_cli_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the fake claude/gemini/codex/opencode/copilot executables first on PATH."""
    # The fakes start with `#!/usr/bin/env python3`: let that find this interpreter directly
    # rather than through a slow version-manager shim.
    python_bin = Path(sys.executable).parent
    path = os.pathsep.join([str(CLI_BIN), str(python_bin), os.environ.get("PATH", "")])
    monkeypatch.setenv("PATH", path)
    for name in list(os.environ):
        if name.startswith(("DEBATE_CLI_", "FAKE_CLI_")):
            monkeypatch.delenv(name)
    return CLI_BIN
