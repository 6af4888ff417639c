"""Model providers: one protocol, a registry of ProviderSpecs open to plugins, and the built-in backends.

`base.py` the Provider protocol, ModelCall / Message / Completion and every provider error; `spec.py` ProviderSpec,
all the program knows about one vendor (settings, family, default models, effort budgets, prices, factory), with the
built-ins in `vendors/`; `registry.py` registers specs (built-ins and `debate_bot.providers` plugins alike) and answers
every question about a provider from its spec; `pricing.py` the one cost estimate the run and the log both use;
`clients.py` ProviderRegistry, one program's clients; `openai_compat.py`, `anthropic_api.py`, `cli_tools.py` the
backends (helped by sse, sdk_errors, http, redact, cli_output).

The SDK-backed classes are imported on first use (`preload_sdks` imports them off the event loop), so importing this
package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from orchestrator.providers.base import (
    Completion,
    DeltaCallback,
    Message,
    ModelCall,
    ModelStringError,
    Provider,
    ProviderError,
    ProviderNotConfiguredError,
    ProviderTimeout,
    UnknownProviderError,
)
from orchestrator.providers.clients import ProviderRegistry
from orchestrator.providers.pricing import estimate_cost, price_for
from orchestrator.providers.registry import (
    BUILTIN_PROVIDERS,
    ENTRY_POINT_GROUP,
    available_providers,
    budget,
    configured_providers,
    context_window,
    default_model_for,
    endpoint_for,
    family,
    find_spec,
    is_cli_tool,
    parse_model,
    preload_sdks,
    provider_spec,
    reasoning_effort,
    register,
    register_provider,
    specs,
    unregister_provider,
)
from orchestrator.providers.spec import Endpoint, Price, ProviderFactory, ProviderSpec
from orchestrator.providers.vendors.cli import CLI_TOOLS

_LAZY = {
    "OpenAICompatProvider": "orchestrator.providers.openai_compat",
    "AnthropicProvider": "orchestrator.providers.anthropic_api",
    "CLIToolProvider": "orchestrator.providers.cli_tools",
}

__all__ = [
    "BUILTIN_PROVIDERS",
    "CLI_TOOLS",
    "ENTRY_POINT_GROUP",
    "AnthropicProvider",
    "CLIToolProvider",
    "Completion",
    "DeltaCallback",
    "Endpoint",
    "Message",
    "ModelCall",
    "ModelStringError",
    "OpenAICompatProvider",
    "Price",
    "Provider",
    "ProviderError",
    "ProviderFactory",
    "ProviderNotConfiguredError",
    "ProviderRegistry",
    "ProviderSpec",
    "ProviderTimeout",
    "UnknownProviderError",
    "available_providers",
    "budget",
    "configured_providers",
    "context_window",
    "default_model_for",
    "endpoint_for",
    "estimate_cost",
    "family",
    "find_spec",
    "is_cli_tool",
    "parse_model",
    "preload_sdks",
    "price_for",
    "provider_spec",
    "reasoning_effort",
    "register",
    "register_provider",
    "specs",
    "unregister_provider",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
