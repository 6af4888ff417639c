"""Model providers: one protocol, a registry open to plugins, and the built-in backends.

The SDK-backed classes are imported on first use, so importing the registry stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from orchestrator.providers.base import (
    Completion,
    DeltaCallback,
    Message,
    ModelCall,
    Provider,
    ProviderError,
    ProviderTimeout,
)
from orchestrator.providers.effort import budget, default_model_for, reasoning_effort
from orchestrator.providers.registry import (
    BUILTIN_PROVIDERS,
    CLI_TOOLS,
    ENTRY_POINT_GROUP,
    FAMILIES,
    ModelStringError,
    ProviderFactory,
    ProviderNotConfiguredError,
    ProviderRegistry,
    UnknownProviderError,
    available_providers,
    family,
    parse_model,
    register_provider,
    unregister_provider,
)

_LAZY = {
    "OpenAICompatProvider": "orchestrator.providers.openai_compat",
    "preset_for": "orchestrator.providers.openai_compat",
    "AnthropicProvider": "orchestrator.providers.anthropic_api",
    "CLIToolProvider": "orchestrator.providers.cli_tools",
}

__all__ = [
    "BUILTIN_PROVIDERS",
    "CLI_TOOLS",
    "ENTRY_POINT_GROUP",
    "FAMILIES",
    "AnthropicProvider",
    "CLIToolProvider",
    "Completion",
    "DeltaCallback",
    "Message",
    "ModelCall",
    "ModelStringError",
    "OpenAICompatProvider",
    "Provider",
    "ProviderError",
    "ProviderFactory",
    "ProviderNotConfiguredError",
    "ProviderRegistry",
    "ProviderTimeout",
    "UnknownProviderError",
    "available_providers",
    "budget",
    "default_model_for",
    "family",
    "parse_model",
    "preset_for",
    "reasoning_effort",
    "register_provider",
    "unregister_provider",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
