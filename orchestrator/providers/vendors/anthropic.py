"""Anthropic (`anthropic:`), through the official `anthropic` SDK's Messages API.

Settings: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (default https://api.anthropic.com). "low" effort
picks claude-haiku-4-5 when no model is named.
"""

from __future__ import annotations

from orchestrator.config import Settings
from orchestrator.providers.base import Provider
from orchestrator.providers.spec import Endpoint, Price, ProviderSpec


def anthropic_backend() -> type:
    """The Anthropic client class; importing it loads the `anthropic` SDK."""
    from orchestrator.providers.anthropic_api import AnthropicProvider

    return AnthropicProvider


def _create(settings: Settings) -> Provider:
    return anthropic_backend().from_settings(SPEC, settings)


# Public list prices (USD per 1M tokens, standard tier, short context), as of late 2025.
PRICES = {
    "claude-opus-4-1": Price(input_per_mtok=15.0, output_per_mtok=75.0),
    "claude-opus-4": Price(input_per_mtok=15.0, output_per_mtok=75.0),
    "claude-sonnet-4-6": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-sonnet-4-5": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-sonnet-4": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-haiku-4-5": Price(input_per_mtok=1.0, output_per_mtok=5.0),
}

SPEC = ProviderSpec(
    name="anthropic",
    family="Anthropic",
    summary="Claude",
    factory=_create,
    key_var="ANTHROPIC_API_KEY",
    base_url_var="ANTHROPIC_BASE_URL",
    is_configured=lambda s: bool(s.anthropic_api_key),
    endpoint=lambda s: Endpoint(s.anthropic_base_url, s.anthropic_api_key),  # no base URL: the SDK's own
    models={"medium": "claude-sonnet-4-6", "low": "claude-haiku-4-5"},
    prices=PRICES,
    preload=anthropic_backend,
)
