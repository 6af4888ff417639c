"""ProviderRegistry: one program's provider clients, made from the specs and its Settings.

Each provider's client is created once, the first time one of its models is resolved, and reused for
every later call (one HTTP connection pool per vendor). A factory that cannot run for lack of
credentials raises ProviderNotConfiguredError(variable); `resolve` turns that into one line naming
the model and the variable to set.
"""

from __future__ import annotations

import logging

from orchestrator.config import Settings
from orchestrator.providers.base import Provider, ProviderNotConfiguredError
from orchestrator.providers.registry import configured_providers, parse_model, provider_spec, specs

log = logging.getLogger(__name__)


class ProviderRegistry:
    """Turns model strings into provider clients, creating each client once and reusing it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._clients: dict[str, Provider] = {}

    def check(self, model_string: str) -> None:
        """What `resolve` refuses (a malformed or unknown model, a missing credential or tool), without
        making the client: a front that only admits debates never loads an SDK (3 s of CPU for anthropic's)."""
        name, model = parse_model(model_string)
        spec = provider_spec(name)
        if spec.check_model is not None:
            spec.check_model(model)
        if name not in self._clients and not spec.configured(self.settings):
            raise ProviderNotConfiguredError(spec.required_variable or "credentials", f"{name}:{model}")

    def resolve(self, model_string: str) -> tuple[Provider, str]:
        """`"openai:gpt-5"` → (the openai provider, `"gpt-5"`)."""
        self.check(model_string)
        name, model = parse_model(model_string)
        spec = provider_spec(name)
        client = self._clients.get(name)
        if client is None:
            try:
                client = spec.factory(self.settings)
            except ProviderNotConfiguredError as exc:
                raise ProviderNotConfiguredError(exc.variable, f"{name}:{model}", fix=exc.fix) from None
            self._clients[name] = client
        return client, model

    def is_configured(self, name: str) -> bool:
        return provider_spec(name).configured(self.settings)

    def configured(self) -> list[str]:
        """Provider names whose credentials or base URL are set (`cli` is listed per tool instead)."""
        return configured_providers(self.settings)

    def configured_cli_tools(self) -> list[str]:
        """`cli:<tool>` for each supported CLI tool whose executable is found (host tools of plugins too)."""
        return [f"{spec.name}:{model}" for spec in specs() if spec.host_tool and spec.host_models
                for model in spec.host_models()]

    def default_model(self, provider: str, effort: str | None = None) -> str:
        """A sensible model for `provider` (`effort` may pick a cheaper one, e.g. anthropic low → haiku)."""
        return provider_spec(provider).default_model(effort or "medium") or "default"

    def needs(self, provider: str) -> str | None:
        """The variable a provider needs before it can be used, if known."""
        return provider_spec(provider).required_variable

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            try:
                await client.aclose()
            except Exception as exc:
                log.debug("closing provider %s failed: %s", getattr(client, "name", "?"), type(exc).__name__)
