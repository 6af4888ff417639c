"""The registry of ProviderSpecs: model strings (`provider:model`) → the spec that knows that provider.

Built-ins and plugins come in through one door, `register(spec)`. A plugin ships an entry point in the
group `debate_bot.providers`, named after the provider, whose object is a ProviderSpec (or, the older
form, a bare factory `Callable[[Settings], Provider]`); entry points are loaded lazily, the first time
an unknown name is looked up or the list is asked for. `register_provider(name, factory, ...)` builds a
spec for the simple case. Every question about a provider (configured? family? default model? budget?
price?) is answered here from its spec, so no other module keeps a table of providers.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from importlib.metadata import entry_points

from orchestrator.config import Settings
from orchestrator.models import EFFORTS, MAX_MODEL_CHARS, too_long
from orchestrator.providers.base import ModelStringError, UnknownProviderError
from orchestrator.providers.spec import (
    DEFAULT_BUDGETS,
    Endpoint,
    ProviderFactory,
    ProviderSpec,
    check_effort,
    family_from_name,
)
from orchestrator.providers.vendors import BUILTIN_SPECS

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "debate_bot.providers"
BUILTIN_PROVIDERS: tuple[str, ...] = tuple(spec.name for spec in BUILTIN_SPECS)
_NAME = re.compile(r"^[a-z][a-z0-9_\-]*$")

_SPECS: dict[str, ProviderSpec] = {}
_entry_points_loaded = False


def register(spec: ProviderSpec, *, replace: bool = False) -> None:
    """Make `spec.name:` model strings resolve to `spec`."""
    if not _NAME.match(spec.name):
        raise ValueError(f"provider name {spec.name!r} must be lowercase letters, digits, '-' or '_'")
    if spec.name in _SPECS and not replace:
        raise ValueError(f"provider {spec.name!r} is already registered")
    _SPECS[spec.name] = spec


def register_provider(
    name: str,
    factory: ProviderFactory,
    *,
    family: str | None = None,
    is_configured: Callable[[Settings], bool] | None = None,
    needs: str | None = None,
    replace: bool = False,
) -> None:
    """Register a provider known only by its factory: `is_configured(settings)` says whether it is usable
    (default: always), `needs` names the variable for the not-configured message. Its models' family is
    guessed from their names (`groq:llama-3.3` → Meta), else `family`."""
    spec = ProviderSpec(name=name, family=family or name.title(), factory=factory, is_configured=is_configured,
                        needs=needs, hosts_many_families=True)
    register(spec, replace=replace)


def unregister_provider(name: str) -> None:
    _SPECS.pop(name, None)


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _SPECS:
            continue
        try:
            obj = ep.load()
            if isinstance(obj, ProviderSpec):
                if obj.name != ep.name:
                    raise ValueError(f"the spec is named {obj.name!r}")
                register(obj)
            else:
                register_provider(ep.name, obj)
        except Exception as exc:  # a broken plugin must not take the built-ins down with it
            log.warning("provider plugin %s (%s) failed to load: %s", ep.name, ep.value, exc)


def available_providers() -> list[str]:
    """Every registered provider name: the built-ins first, then plugins."""
    _load_entry_points()
    builtins = [n for n in BUILTIN_PROVIDERS if n in _SPECS]
    return builtins + sorted(n for n in _SPECS if n not in BUILTIN_PROVIDERS)


def specs() -> list[ProviderSpec]:
    """Every registered spec, in `available_providers()` order."""
    return [_SPECS[name] for name in available_providers()]


def find_spec(name: str) -> ProviderSpec | None:
    """The spec registered as `name`, or None."""
    name = name.strip().lower()
    if name not in _SPECS:
        _load_entry_points()
    return _SPECS.get(name)


def provider_spec(name: str) -> ProviderSpec:
    """The spec registered as `name`; UnknownProviderError (listing the valid names) if there is none."""
    spec = find_spec(name)
    if spec is None:
        raise UnknownProviderError(f"unknown provider {name!r}; valid providers: {', '.join(available_providers())}")
    return spec


def parse_model(s: str) -> tuple[str, str]:
    """`"provider:model"` → `(provider, model)`; `cli:claude` → `("cli", "claude")`."""
    text = (s or "").strip()
    if len(text) > MAX_MODEL_CHARS:
        raise ModelStringError(too_long(text))
    provider, sep, model = text.partition(":")
    provider, model = provider.strip().lower(), model.strip()
    if not sep or not provider or not model:
        raise ModelStringError(
            f"model {s!r} is not provider:model — e.g. anthropic:claude-sonnet-4-6, openai:gpt-5 or cli:claude"
        )
    provider_spec(provider)
    return provider, model


def family(model_string: str) -> str:
    """The model family behind a model string, for picking opponents from different families."""
    provider, _, model = model_string.partition(":")
    spec = find_spec(provider)
    if spec is None:
        return family_from_name(model) or provider.strip().title() or "Unknown"
    return spec.family_of(model.strip())


def budget(provider: str, effort: str) -> int:
    """Max output tokens for one call at this effort (unknown providers get the default budgets)."""
    check_effort(effort)
    spec = find_spec(provider)
    return spec.budget(effort) if spec else DEFAULT_BUDGETS[effort]


def reasoning_effort(provider: str, effort: str, model: str | None = None) -> str | None:
    """The reasoning effort to send with a call, or None when the provider or model takes none."""
    check_effort(effort)
    spec = find_spec(provider)
    if spec is None or spec.reasoning_effort is None:
        return None
    return spec.reasoning_effort(effort, model)


def default_model_for(provider: str, effort: str = "medium") -> str | None:
    """The model to use when only the provider is named; None for providers we know nothing of."""
    check_effort(effort)
    spec = find_spec(provider)
    return spec.default_model(effort) if spec else None


def context_window(model_string: str, settings: Settings) -> int | None:
    """The tokens one call to `model_string` may hold, prompt and answer together, when its spec knows
    them (a local model's slot); None: large enough not to plan for."""
    provider, _, model = model_string.partition(":")
    spec = find_spec(provider)
    if spec is None or spec.context_window is None:
        return None
    return spec.context_window(settings, model.strip())


def endpoint_for(provider: str, settings: Settings) -> Endpoint:
    """Base URL and key of an HTTP provider from the settings; None fields mean "not configured"."""
    spec = provider_spec(provider)
    if spec.endpoint is None:
        raise ValueError(f"provider {provider!r} is not reached over HTTP")
    return spec.endpoint(settings)


def configured_providers(settings: Settings) -> list[str]:
    """The provider prefixes whose credentials or base URL are set. Host tools (`cli`) are not listed:
    they need no credentials, and are offered per tool (`ProviderRegistry.configured_cli_tools`)."""
    return [spec.name for spec in specs() if not spec.host_tool and spec.configured(settings)]


def operator_models(settings: Settings) -> set[str]:
    """Every `provider:model` the operator's configuration can seat without a user typing it: the seats
    and the allowlist's named models (not `provider:*`), each configured provider's defaults at every
    effort, and every model a provider's price table knows. Bounded by the configuration and the code:
    what the metrics may use as label values (orchestrator/metrics.py)."""
    found = {m for m in (settings.debate_proposer, settings.debate_challenger, settings.debate_judge,
                         settings.debate_tiebreak_judge, *settings.debate_judges) if m}
    found |= {m for m in settings.chat_models if not m.endswith(":*")}
    for spec in specs():
        found |= {f"{spec.name}:{name}" for name in spec.prices}
    for provider in configured_providers(settings):
        found |= {f"{provider}:{m}" for m in (default_model_for(provider, e) for e in EFFORTS) if m}
    return found


def is_cli_tool(model_string: str) -> bool:
    """True when the model string runs a program on this host (`cli:…`, or a plugin marked `host_tool`).
    Never raises: a malformed or unknown model string is not a host tool (parse_model says what is wrong)."""
    provider, sep, _ = (model_string or "").partition(":")
    spec = find_spec(provider) if sep else None
    return spec is not None and spec.host_tool


def _import_sdks() -> None:
    for spec in specs():
        if spec.preload is None:
            continue
        try:
            spec.preload()
        except ImportError:
            log.warning("could not preload the SDK of %s", spec.name, exc_info=True)


async def preload_sdks() -> None:
    """Import the model SDKs in a worker thread. Imported lazily by the first debate, they would stall
    the event loop for seconds, and a chat platform's 3 s acknowledgement deadline with it."""
    await asyncio.to_thread(_import_sdks)


for _spec in BUILTIN_SPECS:
    register(_spec, replace=True)
