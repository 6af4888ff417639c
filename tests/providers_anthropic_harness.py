"""What test_providers_anthropic.py shares with other test modules, moved here so that no test module imports
another: `call`."""

from __future__ import annotations

from orchestrator.providers.base import Message, ModelCall


def call(*messages: tuple[str, str], model: str = "claude-sonnet-4-6", **kw: object) -> ModelCall:
    if not messages:
        messages = (("system", "You judge debates."), ("user", "Who won?"))
    return ModelCall(
        model=model,
        messages=tuple(Message(role=r, content=c) for r, c in messages),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )
