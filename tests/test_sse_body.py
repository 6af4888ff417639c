"""How a streamed answer's bytes are read (orchestrator.providers.sse.body): straight off aiohttp's reader
under both real SDKs, through the SDK when the body has a content encoding. (A stream cut mid-way, a
read timeout and an error event go the fast way too: tests/test_providers_openai.py, _anthropic.py.)"""

from __future__ import annotations

import gzip
import json

import pytest
from anthropic._response import AsyncAPIResponse as AnthropicResponse
from openai._response import AsyncAPIResponse as OpenAIResponse

from orchestrator.providers import provider_spec
from orchestrator.providers.anthropic_api import AnthropicProvider
from orchestrator.providers.base import Message, ModelCall
from orchestrator.providers.openai_compat import OpenAICompatProvider
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.providers_openai_harness import _raw_server

KEY = "sk-test-KEY-0123456789"


def _call(model: str) -> ModelCall:
    return ModelCall(model=model, messages=(Message(role="system", content="Be brief."),
                                            Message(role="user", content="Is Rust better than Go for CLIs?")))


def _counting_sdk_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which SDK's `iter_bytes` read a body (a read that went around aiohttp's reader)."""
    used: list[str] = []
    for name, cls in (("openai", OpenAIResponse), ("anthropic", AnthropicResponse)):
        real = cls.iter_bytes

        def counted(self: object, chunk_size: int | None = None, *, _real=real, _name=name) -> object:
            used.append(_name)
            return _real(self, chunk_size)

        monkeypatch.setattr(cls, "iter_bytes", counted)
    return used


async def test_both_sdks_stream_off_aiohttps_reader(llm_server: FakeLLMServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Pins the SDKs' transport internals that the fast read relies on: if an SDK upgrade moves them,
    this fails rather than every call quietly taking the slower path."""
    used = _counting_sdk_reads(monkeypatch)
    text = "Go ships one static binary, and Rust gives you no runtime at all."
    llm_server.add_rule(Reply(text=text, tokens_per_s=200))  # a word every 5 ms: reads of their own
    openai_p = OpenAICompatProvider(provider_spec("openai"), api_key=KEY, base_url=llm_server.openai_base_url,
                                    max_retries=0)
    anthropic_p = AnthropicProvider(provider_spec("anthropic"), api_key=KEY, base_url=llm_server.anthropic_base_url,
                                    max_retries=0)
    deltas: list[str] = []

    async def on_delta(piece: str) -> None:
        deltas.append(piece)

    try:
        first = await openai_p.complete(_call("gpt-5"), on_delta)
        streamed_openai = len(deltas)
        second = await anthropic_p.complete(_call("claude-sonnet-4-6"), on_delta)
    finally:
        await openai_p.aclose()
        await anthropic_p.aclose()

    assert first.text == second.text == text
    assert streamed_openai > 3 and len(deltas) - streamed_openai > 3  # piece by piece, not in one lump
    assert used == []


async def test_a_gzipped_event_stream_is_decoded_through_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    used = _counting_sdk_reads(monkeypatch)
    chunks = [{"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
              for piece in ("Compressed ", "but ", "whole.")]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"

    runner, url = await _raw_server(gzip.compress(body.encode()), headers={"Content-Encoding": "gzip"})
    provider = OpenAICompatProvider(provider_spec("vllm"), api_key=KEY, base_url=url, max_retries=0)
    try:
        result = await provider.complete(_call("m"))
    finally:
        await provider.aclose()
        await runner.cleanup()
    assert result.text == "Compressed but whole."
    assert used == ["openai"]
