"""What test_jury_commands.py shares with other test modules, moved here so that no test module imports another:
`jury_env`."""

from __future__ import annotations

from pathlib import Path

from tests.cli_harness import two_providers
from tests.fakes.llm_server import FakeLLMServer


def jury_env(tmp_path: Path, srv: FakeLLMServer) -> dict[str, str]:
    return two_providers(tmp_path, srv) | {"GEMINI_API_KEY": "gm-test-secret-0123456789",
                                           "GEMINI_BASE_URL": srv.openai_base_url,
                                           "OLLAMA_BASE_URL": srv.openai_base_url}
