"""Model strings (`provider:model`) → Provider instances, through one registry open to plugins.

Built-in providers register through the same door a plugin does: `register_provider(name, factory)`
with `factory: Callable[[Settings], Provider]`. Plugins can also ship an entry point in the group
`debate_bot.providers` whose name is the provider name and whose object is such a factory; entry
points are loaded lazily, the first time an unknown name is looked up or the list is asked for.

A factory that cannot run for lack of credentials raises `ProviderNotConfiguredError(variable)`;
`ProviderRegistry.resolve` turns that into one line naming the model and the variable to set.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points

from orchestrator.config import Settings
from orchestrator.providers.base import Provider
from orchestrator.providers.effort import DEFAULT_MODELS, default_model_for

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "debate_bot.providers"
BUILTIN_PROVIDERS: tuple[str, ...] = ("anthropic", "openai", "gemini", "openrouter", "ollama", "vllm", "cli")

ProviderFactory = Callable[[Settings], Provider]

FAMILIES: dict[str, str] = {
    "anthropic": "Anthropic",
    "openai": "OpenAI",
    "gemini": "Google",
    "openrouter": "OpenRouter",
    "ollama": "Local (Ollama)",
    "vllm": "Local (vLLM)",
    "cli": "CLI",
}

# For providers that host many vendors' models, the family comes from the model name.
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
    ("kimi", "Moonshot"),
    ("moonshot", "Moonshot"),
    ("glm", "Zhipu"),
)

CLI_TOOLS: tuple[str, ...] = ("claude", "gemini", "codex", "opencode", "copilot")
_NAME = re.compile(r"^[a-z][a-z0-9_\-]*$")


class ModelStringError(ValueError):
    """A model string is not `provider:model`."""


class UnknownProviderError(ValueError):
    """The provider part of a model string names no registered provider."""


class ProviderNotConfiguredError(ValueError):
    """A provider's credentials or base URL are missing. `variable` names what to set."""

    def __init__(self, variable: str, model: str | None = None, *, fix: str | None = None) -> None:
        self.variable = variable
        self.model = model
        self.fix = fix
        who = model or "this provider"
        super().__init__(f"{who} needs {variable} — {fix or 'set it in the environment or .env'}")


@dataclass(frozen=True, slots=True)
class _Entry:
    factory: ProviderFactory
    family: str
    is_configured: Callable[[Settings], bool] | None
    needs: str | None


_REGISTRY: dict[str, _Entry] = {}
_entry_points_loaded = False


def register_provider(
    name: str,
    factory: ProviderFactory,
    *,
    family: str | None = None,
    is_configured: Callable[[Settings], bool] | None = None,
    needs: str | None = None,
    replace: bool = False,
) -> None:
    """Register `factory` under `name`.

    `is_configured(settings)` tells `configured()` whether it is usable (default: always);
    `needs` names the variable for the not-configured message.
    """
    if not _NAME.match(name):
        raise ValueError(f"provider name {name!r} must be lowercase letters, digits, '-' or '_'")
    if name in _REGISTRY and not replace:
        raise ValueError(f"provider {name!r} is already registered")
    _REGISTRY[name] = _Entry(factory, family or FAMILIES.get(name, name.title()), is_configured, needs)
    FAMILIES.setdefault(name, family or name.title())


def unregister_provider(name: str) -> None:
    _REGISTRY.pop(name, None)
    if name not in BUILTIN_PROVIDERS:
        FAMILIES.pop(name, None)


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _REGISTRY:
            continue
        try:
            factory = ep.load()
            register_provider(ep.name, factory)
        except Exception as exc:  # a broken plugin must not take the built-ins down with it
            log.warning("provider plugin %s (%s) failed to load: %s", ep.name, ep.value, type(exc).__name__)


def available_providers() -> list[str]:
    """Every registered provider name: the built-ins first, then plugins."""
    _load_entry_points()
    builtins = [n for n in BUILTIN_PROVIDERS if n in _REGISTRY]
    return builtins + sorted(n for n in _REGISTRY if n not in BUILTIN_PROVIDERS)


def _entry(name: str) -> _Entry:
    entry = _REGISTRY.get(name)
    if entry is None:
        _load_entry_points()
        entry = _REGISTRY.get(name)
    if entry is None:
        raise UnknownProviderError(
            f"unknown provider {name!r}; valid providers: {', '.join(available_providers())}"
        )
    return entry


def parse_model(s: str) -> tuple[str, str]:
    """`"provider:model"` → `(provider, model)`; `cli:claude` → `("cli", "claude")`."""
    text = (s or "").strip()
    provider, sep, model = text.partition(":")
    provider, model = provider.strip().lower(), model.strip()
    if not sep or not provider or not model:
        raise ModelStringError(
            f"model {s!r} is not provider:model — e.g. anthropic:claude-sonnet-4-6, openai:gpt-5 or cli:claude"
        )
    _entry(provider)
    return provider, model


def family(model_string: str) -> str:
    """The model family behind a model string, for picking opponents from different families."""
    provider, _, model = model_string.partition(":")
    provider = provider.strip().lower()
    if provider in ("anthropic", "openai", "gemini"):
        return FAMILIES[provider]
    name = model.strip().lower()
    if provider == "cli":
        name = {"codex": "openai", "copilot": "copilot", "opencode": "opencode"}.get(name, name)
    for prefix, label in _MODEL_FAMILIES:
        if name.startswith(prefix) or f"/{prefix}" in name:
            return label
    return FAMILIES.get(provider, provider.title() or "Unknown")


def cli_executable(tool: str) -> str:
    """The executable for a CLI tool: `DEBATE_CLI_<TOOL>` if set, else the tool's own name."""
    from orchestrator.providers.cli_tools import executable_for

    return executable_for(tool)


class ProviderRegistry:
    """Turns model strings into provider clients, creating each client once and reusing it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._clients: dict[str, Provider] = {}

    def resolve(self, model_string: str) -> tuple[Provider, str]:
        """`"openai:gpt-5"` → (the openai provider, `"gpt-5"`)."""
        name, model = parse_model(model_string)
        if name == "cli":
            self._check_cli_tool(model)
        client = self._clients.get(name)
        if client is None:
            entry = _entry(name)
            if entry.is_configured is not None and not entry.is_configured(self.settings):
                raise ProviderNotConfiguredError(entry.needs or "credentials", f"{name}:{model}")
            try:
                client = entry.factory(self.settings)
            except ProviderNotConfiguredError as exc:
                raise ProviderNotConfiguredError(exc.variable, f"{name}:{model}") from None
            self._clients[name] = client
        return client, model

    @staticmethod
    def _check_cli_tool(model: str) -> None:
        tool = model.split("/", 1)[0]
        if tool not in CLI_TOOLS:
            valid = ", ".join(f"cli:{t}" for t in CLI_TOOLS)
            raise ModelStringError(f"unknown CLI tool {tool!r}; valid: {valid}")
        exe = cli_executable(tool)
        if not shutil.which(exe):
            raise ProviderNotConfiguredError(
                f"the {exe} executable",
                f"cli:{model}",
                fix=f"install it on PATH or point DEBATE_CLI_{tool.upper()} at it",
            )

    def is_configured(self, name: str) -> bool:
        entry = _entry(name)
        return entry.is_configured is None or entry.is_configured(self.settings)

    def configured(self) -> list[str]:
        """Provider names whose credentials or base URL are set (`cli` is listed per tool instead)."""
        return [n for n in available_providers() if n != "cli" and self.is_configured(n)]

    def configured_cli_tools(self) -> list[str]:
        """`cli:<tool>` for each supported CLI tool whose executable is on PATH."""
        return [f"cli:{tool}" for tool in CLI_TOOLS if shutil.which(cli_executable(tool))]

    def default_model(self, provider: str, effort: str | None = None) -> str:
        """A sensible model for `provider` (`effort` may pick a cheaper one, e.g. anthropic low → haiku)."""
        _entry(provider)
        model = default_model_for(provider, effort) if effort else DEFAULT_MODELS.get(provider)
        return model or "default"

    def needs(self, provider: str) -> str | None:
        """The variable a provider needs before it can be used, if known."""
        return _entry(provider).needs

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            try:
                await client.aclose()
            except Exception as exc:
                log.debug("closing provider %s failed: %s", getattr(client, "name", "?"), type(exc).__name__)


# ---- built-ins: factories import their SDK lazily, so `debate --help` stays fast ----


def _openai_compatible(name: str) -> ProviderFactory:
    def factory(settings: Settings) -> Provider:
        from orchestrator.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider.from_settings(name, settings)

    factory.__name__ = f"{name}_factory"
    return factory


def _anthropic_factory(settings: Settings) -> Provider:
    from orchestrator.providers.anthropic_api import AnthropicProvider

    return AnthropicProvider.from_settings(settings)


def _cli_factory(settings: Settings) -> Provider:
    from orchestrator.providers.cli_tools import CLIToolProvider

    return CLIToolProvider(secrets=settings.secrets())


_BUILTIN_CHECKS: dict[str, tuple[str, Callable[[Settings], bool]]] = {
    "anthropic": ("ANTHROPIC_API_KEY", lambda s: bool(s.anthropic_api_key)),
    "openai": ("OPENAI_API_KEY", lambda s: bool(s.openai_api_key or s.openai_base_url)),
    "gemini": ("GEMINI_API_KEY", lambda s: bool(s.gemini_api_key)),
    "openrouter": ("OPENROUTER_API_KEY", lambda s: bool(s.openrouter_api_key)),
    "ollama": ("OLLAMA_BASE_URL", lambda s: bool(s.ollama_base_url)),
    "vllm": ("VLLM_BASE_URL", lambda s: bool(s.vllm_base_url)),
}


def _register_builtins() -> None:
    for name in BUILTIN_PROVIDERS:
        if name == "cli":
            register_provider(name, _cli_factory, replace=True)
            continue
        factory = _anthropic_factory if name == "anthropic" else _openai_compatible(name)
        needs, check = _BUILTIN_CHECKS[name]
        register_provider(name, factory, is_configured=check, needs=needs, replace=True)


_register_builtins()


SDK_MODULES = ("orchestrator.providers.openai_compat", "orchestrator.providers.anthropic_api")


def _import_sdks() -> None:
    import importlib

    for name in SDK_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            log.warning("could not preload %s", name, exc_info=True)


async def preload_sdks() -> None:
    """Import the model SDKs in a worker thread. Imported lazily by the first debate, they would stall
    the event loop for seconds, and a chat platform's 3 s acknowledgement deadline with it."""
    import asyncio

    await asyncio.to_thread(_import_sdks)
