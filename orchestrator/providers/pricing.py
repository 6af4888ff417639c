"""Rough USD cost of a model call: the one function the run and the log both call.

Prices live in each provider's spec (per model, per million tokens). Local providers and CLI tools
cost nothing here; a host of many vendors' models (openrouter:anthropic/claude-sonnet-4.5) is priced
at the maker's list price; a model no spec prices has an unknown cost (None), not a zero one.
"""

from __future__ import annotations

from orchestrator.providers.registry import find_spec, specs
from orchestrator.providers.spec import Price


def price_for(model_string: str) -> Price | None:
    """The price of `provider:model` (a zero price for free providers), or None when unknown."""
    provider, _, name = model_string.partition(":")
    if not name:
        provider, name = "", provider
    spec = find_spec(provider) if provider else None
    if spec is not None and (price := spec.price(name)) is not None:
        return price
    return next((price for other in specs() if not other.free and (price := other.price(name))), None)


def estimate_cost(model_string: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD for one call, or None when the model's price is unknown."""
    price = price_for(model_string)
    if price is None:
        return None
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1_000_000
