"""The built-in providers, one module each: everything about a vendor is in its module's ProviderSpec.

A new built-in vendor is one module here plus one line below; a vendor shipped as a plugin needs no
line at all (an entry point in the `debate_bot.providers` group; see orchestrator.providers.registry).
"""

from __future__ import annotations

from orchestrator.providers.spec import ProviderSpec
from orchestrator.providers.vendors import anthropic, cli, gemini, local, ollama, openai, openrouter, vllm

# In this order in `debate models`, in the setup help and when seats are picked by default.
BUILTIN_SPECS: tuple[ProviderSpec, ...] = (
    anthropic.SPEC,
    openai.SPEC,
    gemini.SPEC,
    openrouter.SPEC,
    ollama.SPEC,
    vllm.SPEC,
    cli.SPEC,
    local.SPEC,
)
