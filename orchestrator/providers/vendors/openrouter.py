"""OpenRouter (`openrouter:vendor/model`), through its OpenAI-compatible API and the `openai` SDK.

Settings: OPENROUTER_API_KEY, OPENROUTER_BASE_URL (default https://openrouter.ai/api/v1). It serves
many vendors' models: the family comes from the model name, and a model is priced at its maker's
list price (see orchestrator.providers.pricing).
"""

from __future__ import annotations

from orchestrator.config import Settings
from orchestrator.providers.base import Provider
from orchestrator.providers.spec import Endpoint, ProviderSpec
from orchestrator.providers.vendors.openai import REASONING_BUDGETS, openai_backend


def _create(settings: Settings) -> Provider:
    return openai_backend().from_settings(SPEC, settings)


SPEC = ProviderSpec(
    name="openrouter",
    family="OpenRouter",
    summary="any model on OpenRouter",
    factory=_create,
    key_var="OPENROUTER_API_KEY",
    base_url_var="OPENROUTER_BASE_URL",
    is_configured=lambda s: bool(s.openrouter_api_key),
    endpoint=lambda s: Endpoint(s.openrouter_base_url, s.openrouter_api_key),
    models={"medium": "openai/gpt-5"},
    budgets=REASONING_BUDGETS,
    hosts_many_families=True,
    preload=openai_backend,
)
