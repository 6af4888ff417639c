"""Google Gemini (`gemini:`), through Google's OpenAI-compatible endpoint and the `openai` SDK.

Settings: GEMINI_API_KEY, GEMINI_BASE_URL (default Google's OpenAI-compatible endpoint). The default
models think before answering, so they get OpenAI's reasoning-sized budgets.
"""

from __future__ import annotations

from orchestrator.config import Settings
from orchestrator.providers.base import Provider
from orchestrator.providers.spec import Endpoint, Price, ProviderSpec
from orchestrator.providers.vendors.openai import REASONING_BUDGETS, openai_backend


def _create(settings: Settings) -> Provider:
    return openai_backend().from_settings(SPEC, settings)


SPEC = ProviderSpec(
    name="gemini",
    family="Google",
    summary="Gemini",
    factory=_create,
    key_var="GEMINI_API_KEY",
    base_url_var="GEMINI_BASE_URL",
    is_configured=lambda s: bool(s.gemini_api_key),
    endpoint=lambda s: Endpoint(s.gemini_base_url, s.gemini_api_key),
    models={"medium": "gemini-2.5-pro"},
    budgets=REASONING_BUDGETS,
    prices={
        "gemini-2-5-pro": Price(input_per_mtok=1.25, output_per_mtok=10.0),
        "gemini-2-5-flash": Price(input_per_mtok=0.30, output_per_mtok=2.50),
    },
    preload=openai_backend,
    json_schema=True,  # Gemini's OpenAI-compatible endpoint takes response_format json_schema
)
