"""What test_cli.py shares with other test modules, moved here so that no test module imports another: `ROOT`,
`clean_env`, `debate`, `two_providers`."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.fakes.llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parent.parent


PROVIDER_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GEMINI_API_KEY",
                 "OPENROUTER_API_KEY", "OLLAMA_BASE_URL", "VLLM_BASE_URL", "DEBATE_PROPOSER", "DEBATE_CHALLENGER",
                 "DEBATE_JUDGE", "DEBATE_DB", "DEBATE_DATABASE_URL")


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARS}
    env["PYTHONPATH"] = str(ROOT)
    env["DEBATE_DB"] = str(tmp_path / "debates.db")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"  # no stray cli tools
    env["DEBATE_MAX_RETRIES"] = "0"
    env.update(extra)
    return env


async def debate(tmp_path: Path, *args: str, env: dict[str, str], limit_s: float = 120) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots.cli", *args, cwd=tmp_path, env=env,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), limit_s)
    return proc.returncode or 0, out.decode(), err.decode()


def two_providers(tmp_path: Path, srv: FakeLLMServer) -> dict[str, str]:
    return clean_env(tmp_path, OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=srv.openai_base_url,
                     ANTHROPIC_API_KEY="sk-ant-test-key-123456", ANTHROPIC_BASE_URL=srv.anthropic_base_url)
