"""OpenAI (`openai:`), through the `openai` SDK; also the backend every OpenAI-compatible vendor shares.

Settings: OPENAI_API_KEY, OPENAI_BASE_URL (default https://api.openai.com/v1). A base URL alone is
enough: local servers behind it often want no key.

Budgets are four times the default: the default models think before they answer, and the hidden
reasoning tokens count against `max_completion_tokens`, so with the plain budget a "low" turn could be
spent entirely on reasoning and come back empty. Reasoning models (gpt-5*, o1/o3/o4*) get
`reasoning_effort` (low → low, medium → medium, high and max → high); other models reject it.
"""

from __future__ import annotations

import re

from orchestrator.config import Settings
from orchestrator.providers.base import Provider
from orchestrator.providers.spec import DEFAULT_BUDGETS, Endpoint, Price, ProviderSpec, check_effort

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
REASONING_BUDGETS = {effort: tokens * 4 for effort, tokens in DEFAULT_BUDGETS.items()}

_REASONING_MODEL = re.compile(r"^(gpt-5|o[1-9])(\b|[-.])")
_REASONING_EFFORT = {"low": "low", "medium": "medium", "high": "high", "max": "high"}


def is_reasoning_model(model: str) -> bool:
    return bool(_REASONING_MODEL.match(model))


def reasoning_effort(effort: str, model: str | None = None) -> str | None:
    """`reasoning_effort` for OpenAI reasoning models; None (not sent) when `model` is not one."""
    check_effort(effort)
    if model is not None and not is_reasoning_model(model):
        return None
    return _REASONING_EFFORT[effort]


def openai_backend() -> type:
    """The OpenAI-compatible client class; importing it loads the `openai` SDK (about a second)."""
    from orchestrator.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider


def _endpoint(settings: Settings) -> Endpoint:
    key = settings.openai_api_key
    if key is None and settings.openai_base_url:
        key = "not-needed"  # a local server behind OPENAI_BASE_URL
    return Endpoint(settings.openai_base_url or OPENAI_DEFAULT_BASE_URL, key)


def _create(settings: Settings) -> Provider:
    return openai_backend().from_settings(SPEC, settings)


# Public list prices (USD per 1M tokens, standard tier, short context), as of late 2025.
PRICES = {
    "gpt-5": Price(input_per_mtok=1.25, output_per_mtok=10.0),
    "gpt-5-mini": Price(input_per_mtok=0.25, output_per_mtok=2.0),
    "gpt-5-nano": Price(input_per_mtok=0.05, output_per_mtok=0.40),
    "gpt-4-1": Price(input_per_mtok=2.0, output_per_mtok=8.0),
    "gpt-4o": Price(input_per_mtok=2.5, output_per_mtok=10.0),
    "gpt-4o-mini": Price(input_per_mtok=0.15, output_per_mtok=0.60),
}

SPEC = ProviderSpec(
    name="openai",
    family="OpenAI",
    summary="GPT",
    factory=_create,
    key_var="OPENAI_API_KEY",
    base_url_var="OPENAI_BASE_URL",
    is_configured=lambda s: bool(s.openai_api_key or s.openai_base_url),
    endpoint=_endpoint,
    models={"medium": "gpt-5", "low": "gpt-5-mini"},
    budgets=REASONING_BUDGETS,
    prices=PRICES,
    preload=openai_backend,
    max_tokens_field="max_completion_tokens",  # reasoning models reject max_tokens
    json_schema=True,
    reasoning_effort=reasoning_effort,
)
