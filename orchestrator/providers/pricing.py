"""Rough USD cost of a model call, from list prices per million tokens.

Prices change: this table is an estimate for the log and the report, never a bill. Local
providers cost nothing; a model missing here has an unknown cost (None), not a zero one.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict


class Price(BaseModel):
    model_config = ConfigDict(frozen=True)

    input_per_mtok: float
    output_per_mtok: float


# Public list prices (USD per 1M tokens, standard tier, short context), as of late 2025.
PRICES: dict[str, Price] = {
    "claude-opus-4-1": Price(input_per_mtok=15.0, output_per_mtok=75.0),
    "claude-opus-4": Price(input_per_mtok=15.0, output_per_mtok=75.0),
    "claude-sonnet-4-6": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-sonnet-4-5": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-sonnet-4": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-haiku-4-5": Price(input_per_mtok=1.0, output_per_mtok=5.0),
    "gpt-5": Price(input_per_mtok=1.25, output_per_mtok=10.0),
    "gpt-5-mini": Price(input_per_mtok=0.25, output_per_mtok=2.0),
    "gpt-5-nano": Price(input_per_mtok=0.05, output_per_mtok=0.40),
    "gpt-4-1": Price(input_per_mtok=2.0, output_per_mtok=8.0),
    "gpt-4o": Price(input_per_mtok=2.5, output_per_mtok=10.0),
    "gpt-4o-mini": Price(input_per_mtok=0.15, output_per_mtok=0.60),
    "gemini-2-5-pro": Price(input_per_mtok=1.25, output_per_mtok=10.0),
    "gemini-2-5-flash": Price(input_per_mtok=0.30, output_per_mtok=2.50),
}

# Providers that run on our own hardware or bill elsewhere (a CLI tool's own subscription).
FREE_PROVIDERS = frozenset({"ollama", "vllm", "cli", "local", "fake", "echo"})

_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def _normalise(name: str) -> str:
    name = name.rsplit("/", 1)[-1].lower()  # openrouter:anthropic/claude-sonnet-4.5
    name = name.replace(".", "-").replace("_", "-")
    return _DATE_SUFFIX.sub("", name)


def price_for(model_string: str) -> Price | None:
    """The price of `provider:model`, a zero price for local providers, None when unknown."""
    provider, _, name = model_string.partition(":")
    if not name:
        provider, name = "", provider
    if provider.lower() in FREE_PROVIDERS:
        return Price(input_per_mtok=0.0, output_per_mtok=0.0)
    return PRICES.get(_normalise(name))


def estimate_cost(model_string: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD for one call, or None when the model's price is unknown."""
    price = price_for(model_string)
    if price is None:
        return None
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1_000_000
