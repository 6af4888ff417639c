"""ProviderSpec: everything the program knows about one vendor or backend, in one value.

A spec says which settings make the provider usable (its key and base-URL variables), which model
family it belongs to, which model to use when only the provider is named (per effort), how many output
tokens each effort may spend, what its models cost, and how to build a client (`factory`, which
imports its SDK only when called). The built-in specs live one per module in
`orchestrator.providers.vendors`; a plugin ships its own spec under the `debate_bot.providers` entry
point group, and both are registered by `orchestrator.providers.registry.register`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict

from orchestrator.config import Settings
from orchestrator.models import EFFORTS
from orchestrator.providers.base import Provider, ProviderNotConfiguredError

ProviderFactory = Callable[[Settings], Provider]

# Output tokens per call for providers that do not set their own.
DEFAULT_BUDGETS: Mapping[str, int] = MappingProxyType({"low": 1024, "medium": 2048, "high": 4096, "max": 8192})


class Price(BaseModel):
    """List price in USD per million tokens: an estimate for the log and the report, never a bill."""

    model_config = ConfigDict(frozen=True)

    input_per_mtok: float
    output_per_mtok: float


FREE = Price(input_per_mtok=0.0, output_per_mtok=0.0)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where an HTTP provider's API lives and the key it takes; None: not configured."""

    base_url: str | None
    api_key: str | None


# For hosts that serve many vendors' models (OpenRouter, Ollama, vLLM), the family comes from the model name.
_MODEL_FAMILIES: tuple[tuple[str, str], ...] = (
    ("claude", "Anthropic"),
    ("anthropic", "Anthropic"),
    ("gpt", "OpenAI"),
    ("openai", "OpenAI"),
    ("codex", "OpenAI"),
    ("o1", "OpenAI"),
    ("o3", "OpenAI"),
    ("o4", "OpenAI"),
    ("gemini", "Google"),
    ("gemma", "Google"),
    ("google", "Google"),
    ("llama", "Meta"),
    ("meta", "Meta"),
    ("qwen", "Qwen"),
    ("mistral", "Mistral"),
    ("mixtral", "Mistral"),
    ("deepseek", "DeepSeek"),
    ("phi", "Microsoft"),
    ("grok", "xAI"),
    ("x-ai", "xAI"),
    ("command", "Cohere"),
    ("smollm", "Hugging Face"),
    ("kimi", "Moonshot"),
    ("moonshot", "Moonshot"),
    ("glm", "Zhipu"),
)

_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def family_from_name(model: str) -> str | None:
    """The maker of a model from its name (`anthropic/claude-sonnet-4.5`, `llama3.3`), or None."""
    name = model.strip().lower()
    for prefix, label in _MODEL_FAMILIES:
        if name.startswith(prefix) or f"/{prefix}" in name:
            return label
    return None


def price_key(model: str) -> str:
    """The key a price table uses: `anthropic/claude-sonnet-4.5-20250929` → `claude-sonnet-4-5`."""
    name = model.rsplit("/", 1)[-1].lower()
    name = name.replace(".", "-").replace("_", "-")
    return _DATE_SUFFIX.sub("", name)


@cache
def _fields_by_variable() -> dict[str, str]:
    return {f.alias: name for name, f in Settings.model_fields.items() if f.alias}


def setting(settings: Settings, variable: str) -> str | None:
    """The value of the setting read from environment variable `variable` (e.g. OPENAI_API_KEY), if set."""
    name = _fields_by_variable().get(variable)
    value = getattr(settings, name, None) if name else None
    return str(value) if value not in (None, "") else None


def check_effort(effort: str) -> None:
    if effort not in EFFORTS:
        raise ValueError(f"effort must be one of {', '.join(EFFORTS)}, not {effort!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSpec:
    """One provider: its name (the `name:` of model strings) and everything about it."""

    name: str
    family: str  # the model family, for seating debaters from different families
    factory: ProviderFactory  # Settings → a client; raises ProviderNotConfiguredError when it cannot run
    summary: str = ""  # one line for `debate models` and the setup help
    key_var: str | None = None  # the environment variable holding its API key
    base_url_var: str | None = None  # the environment variable holding its base URL
    needs: str | None = None  # what a not-configured error names; default: key_var, then base_url_var
    is_configured: Callable[[Settings], bool] | None = None  # None: always usable
    endpoint: Callable[[Settings], Endpoint] | None = None  # HTTP providers: base URL and key from settings
    models: Mapping[str, str] = field(default_factory=dict)  # effort → default model; "medium" is the fallback
    budgets: Mapping[str, int] = field(default_factory=lambda: DEFAULT_BUDGETS)  # effort → max output tokens per call
    prices: Mapping[str, Price] = field(default_factory=dict)  # price_key(model) → list price
    free: bool = False  # runs on our hardware or bills elsewhere (a CLI tool's own subscription): cost 0
    hosts_many_families: bool = False  # the family comes from the model name (OpenRouter, Ollama, vLLM)
    model_family: Callable[[str], str] | None = None  # overrides both rules above
    host_tool: bool = False  # runs a program on this host: operator-only, never offered to chat by default
    check_model: Callable[[str], None] | None = None  # raises ModelStringError/ProviderNotConfiguredError early
    host_models: Callable[[], list[str]] | None = None  # host tools: the models usable here now
    setup_example: str = "..."  # the value shown in the setup help, e.g. http://localhost:11434
    preload: Callable[[], object] | None = None  # imports the SDK behind `factory` (see preload_sdks)
    # OpenAI-compatible wire details (other backends ignore them)
    max_tokens_field: str = "max_tokens"
    reasoning_effort: Callable[[str, str | None], str | None] | None = None  # (effort, model) → value to send
    json_schema: bool = False  # takes `response_format: {"type": "json_schema", … "strict": true}`
    # (settings, model) → the tokens one call's prompt and answer share, when known and small enough to plan for
    context_window: Callable[[Settings, str], int | None] | None = None

    @property
    def required_variable(self) -> str | None:
        return self.needs or self.key_var or self.base_url_var

    def configured(self, settings: Settings) -> bool:
        return self.is_configured is None or self.is_configured(settings)

    def client_arguments(self, settings: Settings, *, needs_base_url: bool = False) -> dict[str, object]:
        """What an SDK-backed provider of this spec is built from (its `from_settings`): the endpoint's key and
        base URL, the retries, the call timeout and the secrets to redact; ProviderNotConfiguredError names
        the variable to set when the key (or, with `needs_base_url`, the base URL) is missing."""
        endpoint = self.endpoint(settings) if self.endpoint else None
        if endpoint is None or not endpoint.api_key or (needs_base_url and not endpoint.base_url):
            raise ProviderNotConfiguredError(self.required_variable
                                             or ("a base URL and key" if needs_base_url else "an API key"))
        return {"api_key": endpoint.api_key, "base_url": endpoint.base_url,
                "max_retries": settings.debate_max_retries, "timeout_s": settings.debate_call_timeout,
                "secrets": settings.secrets()}

    def default_model(self, effort: str = "medium") -> str | None:
        check_effort(effort)
        return self.models.get(effort) or self.models.get("medium")

    def budget(self, effort: str) -> int:
        check_effort(effort)
        return self.budgets.get(effort) or DEFAULT_BUDGETS[effort]

    def price(self, model: str) -> Price | None:
        return FREE if self.free else self.prices.get(price_key(model))

    def family_of(self, model: str) -> str:
        if self.model_family is not None:
            return self.model_family(model)
        if self.hosts_many_families:
            return family_from_name(model) or self.family
        return self.family
