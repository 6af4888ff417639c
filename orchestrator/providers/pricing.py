"""Rough USD cost of a model call: the one function the run and the log both call.

Prices live in each provider's spec (per model, per million tokens). Local providers and CLI tools
cost nothing here; a host of many vendors' models (openrouter:anthropic/claude-sonnet-4.5) is priced
at the maker's list price; a model no spec prices has an unknown cost (None), not a zero one.
"""

from __future__ import annotations

from orchestrator.providers.registry import find_spec, specs
from orchestrator.providers.spec import FREE, Price, family_from_name


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


def highest_price(model_string: str) -> Price:
    """What a budget counts a model at whose price no spec knows (a model must not be a way around a
    budget): its vendor's highest known list price — the provider's own table, or for a host of many
    vendors' models the maker's (by the model's name) — else the highest price any spec knows."""
    provider, _, name = model_string.partition(":")
    spec = find_spec(provider) if name else None
    own = dict(spec.prices) if spec is not None and not spec.hosts_many_families else {}
    if not own:
        maker = family_from_name(name or provider)
        own = {key: price for other in specs() if not other.free and other.family == maker
               for key, price in other.prices.items()}
    if not own:
        own = {key: price for other in specs() if not other.free for key, price in other.prices.items()}
    return max(own.values(), key=lambda p: (p.output_per_mtok, p.input_per_mtok), default=FREE)


def budget_price(model_string: str) -> Price:
    """The price a budget counts `model_string` at: its own, else `highest_price`."""
    return price_for(model_string) or highest_price(model_string)


def counted_cost(model_string: str, input_tokens: int, output_tokens: int, recorded: float | None) -> float:
    """USD a budget counts for one call: the cost recorded in the log, else the tokens at `highest_price`."""
    if recorded is not None:
        return recorded
    price = highest_price(model_string)
    return (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1_000_000
