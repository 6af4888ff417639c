"""Coding agents' command-line tools (`cli:claude`, `cli:gemini`, `cli:codex`, `cli:opencode`, `cli:copilot`).

The tools run as subprocesses on this host (see orchestrator.providers.cli_tools for how each is
called and which environment each gets): operator-only, so `host_tool` is set and chat never offers
them unless the operator lists them. Configured when the executable is found (DEBATE_CLI_<TOOL> or
PATH), not by a key; free here, since each tool bills its own subscription. The family follows the tool
(claude → Anthropic, codex → OpenAI, gemini → Google), or for opencode and copilot the `/model` named.
"""

from __future__ import annotations

import shutil

from orchestrator.config import Settings
from orchestrator.providers.base import ModelStringError, Provider, ProviderNotConfiguredError
from orchestrator.providers.cli_tools import TOOLS, CLIToolProvider, executable_for
from orchestrator.providers.spec import ProviderSpec, family_from_name

CLI_TOOLS: tuple[str, ...] = tuple(TOOLS)


def _family(model: str) -> str:
    tool, _, named = model.partition("/")
    spec = TOOLS.get(tool)
    return spec.family_of(named) if spec else family_from_name(model) or "CLI"


def _check(model: str) -> None:
    tool = model.split("/", 1)[0]
    if tool not in TOOLS:
        valid = ", ".join(f"cli:{t}" for t in TOOLS)
        raise ModelStringError(f"unknown CLI tool {tool!r}; valid: {valid}")
    exe = executable_for(tool)
    if not shutil.which(exe):
        raise ProviderNotConfiguredError(
            f"the {exe} executable", f"cli:{model}", fix=f"install it on PATH or point DEBATE_CLI_{tool.upper()} at it"
        )


def _on_path() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(executable_for(tool))]


def _create(settings: Settings) -> Provider:
    return CLIToolProvider(settings=settings, secrets=settings.secrets())


SPEC = ProviderSpec(
    name="cli",
    family="CLI",
    summary="a coding agent's command-line tool on this host",
    factory=_create,
    needs="the tool's executable",
    models={"medium": "claude"},
    free=True,
    model_family=_family,
    host_tool=True,
    check_model=_check,
    host_models=_on_path,
)
