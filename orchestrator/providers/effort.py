"""Effort levels → output-token budgets, reasoning effort and default models, per provider.

Output-token budget (``budget``):

    ==========  =====  ======  =====  =====
    provider    low    medium  high   max
    ==========  =====  ======  =====  =====
    anthropic    1024    2048   4096   8192
    openai       4096    8192  16384  32768
    gemini       4096    8192  16384  32768
    openrouter   4096    8192  16384  32768
    ollama       1024    2048   4096   8192
    vllm         1024    2048   4096   8192
    cli             —       —      —      —   (the tool decides; budget() still answers)
    other        1024    2048   4096   8192
    ==========  =====  ======  =====  =====

OpenAI, Gemini and OpenRouter's default models think before they answer, and the hidden reasoning
tokens count against ``max_completion_tokens``: with the plain budget a "low" turn could be spent
entirely on reasoning and come back empty, so those providers get four times as much.

Reasoning effort (``reasoning_effort``, sent as ``reasoning_effort`` to OpenAI reasoning models
only — gpt-5*, o1/o3/o4*; other models reject the parameter):

    low → "low", medium → "medium", high → "high", max → "high"

Default model per effort (``default_model_for``), used only when the user names a provider but no
model: anthropic low → claude-haiku-4-5, openai low → gpt-5-mini; everything else is the provider's
usual default.
"""

from __future__ import annotations

import re

from orchestrator.models import EFFORTS

_BASE: dict[str, int] = {"low": 1024, "medium": 2048, "high": 4096, "max": 8192}
_REASONING_MULTIPLIER: dict[str, int] = {"openai": 4, "gemini": 4, "openrouter": 4}
_REASONING_EFFORT: dict[str, str] = {"low": "low", "medium": "medium", "high": "high", "max": "high"}
_OPENAI_REASONING_MODEL = re.compile(r"^(gpt-5|o[1-9])(\b|[-.])")

DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-5",
    "gemini": "gemini-2.5-pro",
    "openrouter": "openai/gpt-5",
    "ollama": "qwen3",
    "vllm": "default",
    "cli": "claude",
}
_EFFORT_MODELS: dict[tuple[str, str], str] = {
    ("anthropic", "low"): "claude-haiku-4-5",
    ("openai", "low"): "gpt-5-mini",
}


def _check(effort: str) -> None:
    if effort not in EFFORTS:
        raise ValueError(f"effort must be one of {', '.join(EFFORTS)}, not {effort!r}")


def budget(provider: str, effort: str) -> int:
    """Max output tokens for one call at this effort."""
    _check(effort)
    return _BASE[effort] * _REASONING_MULTIPLIER.get(provider, 1)


def is_reasoning_model(model: str) -> bool:
    return bool(_OPENAI_REASONING_MODEL.match(model))


def reasoning_effort(provider: str, effort: str, model: str | None = None) -> str | None:
    """`reasoning_effort` for OpenAI reasoning models, else None (parameter not sent).

    With `model` given, non-reasoning models (gpt-4o, gpt-4.1 …) get None too.
    """
    _check(effort)
    if provider != "openai":
        return None
    if model is not None and not is_reasoning_model(model):
        return None
    return _REASONING_EFFORT[effort]


def default_model_for(provider: str, effort: str = "medium") -> str | None:
    """The model to use when only the provider is named; None for providers we know nothing of."""
    _check(effort)
    return _EFFORT_MODELS.get((provider, effort)) or DEFAULT_MODELS.get(provider)
