"""What a chat user may start: the operator's model allowlist, and ceilings on rounds and effort.

Slack and Discord hold every debate they start to a `ChatPolicy`; the CLI on the host is the operator
and is not held to one. The rules, each set by one variable:

- models: `DEBATE_CHAT_MODELS`, comma-separated `provider:model` (exact) or `provider:*`. Empty: any
  model of a configured API provider. `cli:` tools and `local:` models run programs on the host, so
  they are never allowed from chat unless listed (`cli:claude`, `local:smollm2-135m`, or `cli:*`).
- rounds: at most `DEBATE_CHAT_MAX_ROUNDS`; effort: at most `DEBATE_CHAT_MAX_EFFORT` (low < medium <
  high < max). Asking for more is refused; a default above the ceiling is lowered to it.

Every refusal is a `NotAllowed` whose message is short, says which limit, and names its variable.
The same rules decide what chat surfaces offer (`/debate models`, Discord's model autocomplete).
"""

from __future__ import annotations

from orchestrator.config import Settings
from orchestrator.models import EFFORTS
from orchestrator.providers import ProviderRegistry, is_cli_tool, parse_model

CLI = "cli"


class NotAllowed(ValueError):
    """A chat request beyond the operator's policy; the message is shown to the user as is."""


class ChatPolicy:
    """The operator's limits on what chat users start, read from `Settings`."""

    def __init__(self, settings: Settings, registry: ProviderRegistry) -> None:
        self.settings = settings
        self.registry = registry
        self.entries: list[tuple[str, str]] = [_entry(e) for e in settings.chat_models]

    # ---- models

    def allows(self, model: str) -> bool:
        """Whether chat users may seat `model` (a well-formed `provider:model`)."""
        provider, name = parse_model(model)
        if not self.entries:
            return not is_cli_tool(model) and self.registry.is_configured(provider)
        return any(p == provider and m in ("*", name) for p, m in self.entries)

    def check_model(self, model: str, role: str) -> None:
        if not self.allows(model):
            raise NotAllowed(f"The {role} model `{model}` is not allowed from chat. Allowed: {self.allowed_text()} "
                             "(set by DEBATE_CHAT_MODELS).")

    def allowed_text(self) -> str:
        if self.entries:
            return ", ".join(f"{p}:{m}" for p, m in self.entries)
        configured = self.registry.configured()
        return ", ".join(f"{p}:*" for p in configured) if configured else "no model yet"

    def open_providers(self) -> list[str]:
        """Providers any of whose models may be picked, and that can run now."""
        if not self.entries:
            return self.registry.configured()
        wildcards = [p for p, m in self.entries if m == "*"]
        return [p for p in dict.fromkeys(wildcards) if self._usable_provider(p)]

    def offered(self) -> list[str]:
        """Concrete models to suggest to chat users: allowed, and able to run now. The operator's
        default seats come first, then each open provider's default model, then listed models."""
        settings, registry = self.settings, self.registry
        candidates = [m for m in (settings.debate_proposer, settings.debate_challenger, settings.debate_judge) if m]
        for provider in registry.configured():
            model = registry.default_model(provider)
            candidates.append(model if model.startswith(f"{provider}:") else f"{provider}:{model}")
        candidates += [f"{p}:{m}" for p, m in self.entries if m != "*"]
        candidates += registry.configured_cli_tools()
        return [m for m in dict.fromkeys(candidates) if self._offerable(m)]

    def _offerable(self, model: str) -> bool:
        try:
            if not self.allows(model):
                return False
        except ValueError:  # a malformed operator default: not something to offer
            return False
        provider = model.partition(":")[0].strip().lower()
        if provider == CLI:
            return model in self.registry.configured_cli_tools()
        return self._usable_provider(provider)

    def _usable_provider(self, provider: str) -> bool:
        if provider == CLI:
            return bool(self.registry.configured_cli_tools())
        try:
            return self.registry.is_configured(provider)
        except ValueError:  # a provider listed by the operator that is not installed
            return False

    # ---- rounds and effort

    def rounds(self, requested: int | None, default: int) -> int:
        ceiling = self.settings.debate_chat_max_rounds
        if requested is not None and requested > ceiling:
            raise NotAllowed(f"Chat debates here run at most {ceiling} round{'s' if ceiling != 1 else ''} "
                             f"(set by DEBATE_CHAT_MAX_ROUNDS); you asked for {requested}.")
        return requested if requested is not None else min(default, ceiling)

    def effort(self, requested: str | None, default: str) -> str:
        ceiling = self.settings.debate_chat_max_effort
        if requested is not None and EFFORTS.index(requested) > EFFORTS.index(ceiling):
            raise NotAllowed(f"Chat debates here run at most `{ceiling}` effort (set by DEBATE_CHAT_MAX_EFFORT); "
                             f"you asked for `{requested}`.")
        chosen = requested or default
        return chosen if EFFORTS.index(chosen) <= EFFORTS.index(ceiling) else ceiling


def _entry(text: str) -> tuple[str, str]:
    provider, _, model = text.partition(":")
    return provider.strip().lower(), model.strip()
