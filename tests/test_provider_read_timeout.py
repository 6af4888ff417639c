"""The SDKs' read timeout (the longest silence inside a streamed body) is armed only when it could end a call
before the call's own deadline: while it is set, aiohttp re-arms a timer for every chunk it reads. Both
providers, through their real SDKs, against the loopback LLM peer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from orchestrator.providers import provider_spec
from orchestrator.providers.anthropic_api import AnthropicProvider
from orchestrator.providers.base import Message, ModelCall
from orchestrator.providers.openai_compat import OpenAICompatProvider
from tests.fakes.llm_server import FakeLLMServer, Reply

WORDS = 40
REPLY = " ".join(f"word{i}" for i in range(WORDS))


def provider_for(kind: str, server: FakeLLMServer, timeout_s: float) -> Any:
    if kind == "openai":
        return OpenAICompatProvider(provider_spec("openai"), api_key="sk-test-KEY-0123456789",
                                    base_url=server.openai_base_url, max_retries=0, timeout_s=timeout_s)
    return AnthropicProvider(provider_spec("anthropic"), api_key="sk-ant-test-KEY-0123456789",
                             base_url=server.anthropic_base_url, max_retries=0, timeout_s=timeout_s)


@contextmanager
def read_timers() -> Iterator[list[str]]:
    """The read-timeout timers aiohttp's client schedules on this loop meanwhile."""
    loop = asyncio.get_running_loop()
    armed: list[str] = []
    real = loop.call_later

    def call_later(delay: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        if getattr(callback, "__name__", "") == "_on_read_timeout":
            armed.append(type(getattr(callback, "__self__", None)).__name__)
        return real(delay, callback, *args, **kwargs)

    loop.call_later = call_later  # type: ignore[method-assign]
    try:
        yield armed
    finally:
        del loop.call_later  # the instance attribute goes; the class's method shows through again


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_the_read_timeout_is_armed_per_chunk_only_when_shorter_than_the_call(
    llm_server: FakeLLMServer, kind: str
) -> None:
    llm_server.add_rule(Reply(text=REPLY, tokens_per_s=200))  # a word every 5 ms: most in reads of their own
    model = "gpt-5" if kind == "openai" else "claude-sonnet-4-5"
    messages = (Message(role="user", content="Is Rust better than Go for CLIs?"),)
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    armed_by: dict[str, list[str]] = {}
    for label, client_s, call_s in (("the product's (both the same)", 30.0, 30.0), ("shorter", 5.0, 30.0)):
        provider = provider_for(kind, llm_server, client_s)
        deltas.clear()
        try:
            with read_timers() as armed:
                result = await provider.complete(ModelCall(model=model, messages=messages, timeout_s=call_s), on_delta)
        finally:
            await provider.aclose()
        assert result.text == "".join(deltas) == REPLY
        armed_by[label] = armed

    assert armed_by["the product's (both the same)"] == []
    assert len(armed_by["shorter"]) >= 5  # re-armed chunk after chunk (a loaded loop reads several at once)
    assert set(armed_by["shorter"]) == {"ResponseHandler"}
