"""The Anthropic provider through the real `anthropic` SDK against the loopback peer."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp import web

from orchestrator.providers import budget, provider_spec
from orchestrator.providers.anthropic_api import AnthropicProvider, to_anthropic
from orchestrator.providers.base import Message, ProviderError, ProviderTimeout
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.providers_anthropic_harness import call

ANTHROPIC = provider_spec("anthropic")
KEY = "sk-ant-test-KEY-0123456789"


def make(server: FakeLLMServer, *, retries: int = 0) -> AnthropicProvider:
    return AnthropicProvider(ANTHROPIC, api_key=KEY, base_url=server.anthropic_base_url, max_retries=retries)


async def test_streams_deltas_and_reports_usage(llm_server: FakeLLMServer) -> None:
    reply = "Seat A won: its evidence was concrete and B conceded the latency point."
    llm_server.add_rule(Reply(text=reply, tokens_per_s=200))  # a word every 5 ms: reads of their own
    provider = make(llm_server)
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    result = await provider.complete(call(), on_delta)
    await provider.aclose()
    assert len(deltas) > 5 and "".join(deltas) == result.text == reply
    record = llm_server.requests[0]
    assert result.input_tokens == -(-len(record.prompt_text) // 4)  # from message_start
    assert result.output_tokens == -(-len(reply) // 4)  # from message_delta
    assert record.api == "anthropic" and record.model == "claude-sonnet-4-6" and record.stream
    assert record.body["system"] == "You judge debates."
    assert record.body["messages"] == [{"role": "user", "content": "Who won?"}]
    assert record.body["max_tokens"] == budget("anthropic", "medium")
    assert "temperature" not in record.body
    assert record.api_key == KEY  # SDK 2.x sends it as a Bearer token
    assert "anthropic-version" in record.headers


async def test_messages_are_merged_into_alternation(llm_server: FakeLLMServer) -> None:
    provider = make(llm_server)
    await provider.complete(
        call(
            ("system", "Rules."),
            ("assistant", "My earlier opening."),
            ("user", "Challenge one."),
            ("user", "Challenge two."),
            ("system", "Be brief."),
            ("assistant", "Defense."),
        )
    )
    await provider.aclose()
    body = llm_server.requests[0].body
    assert body["system"] == "Rules.\n\nBe brief."
    assert body["messages"] == [
        {"role": "user", "content": "Continue."},
        {"role": "assistant", "content": "My earlier opening."},
        {"role": "user", "content": "Challenge one.\n\nChallenge two."},
        {"role": "assistant", "content": "Defense."},
    ]


def test_only_system_gets_a_user_turn() -> None:
    system, turns = to_anthropic([Message(role="system", content="Say hi.")])
    assert system == "Say hi." and turns == [{"role": "user", "content": "Continue."}]


async def test_overloaded_then_success_is_retried(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(status=429), times=1)
    llm_server.add_rule(Reply(status=529, retry_after=0.01), times=1)
    provider = make(llm_server, retries=2)
    result = await provider.complete(call())
    await provider.aclose()
    assert result.text
    assert [r.status for r in llm_server.requests] == [429, 529, 200]


async def test_server_error_past_retries_hides_the_key(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(status=500, retry_after=0.01))
    provider = make(llm_server, retries=1)
    with pytest.raises(ProviderError) as info:
        await provider.complete(call())
    await provider.aclose()
    assert len(llm_server.requests) == 2
    assert "HTTP 500" in str(info.value) and KEY not in str(info.value)


async def test_bad_key_is_kind_auth(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(status=401))
    provider = make(llm_server, retries=2)
    with pytest.raises(ProviderError) as info:
        await provider.complete(call())
    await provider.aclose()
    assert info.value.kind == "auth" and KEY not in str(info.value)
    assert len(llm_server.requests) == 1


async def test_hang_times_out_and_disconnects(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text="Warm."), times=1)
    llm_server.add_rule(Reply(hang=True))
    provider = make(llm_server)
    # a first call opens the connection and loads what the SDK loads on first use: on a loaded machine
    # that alone outlasted 0.3 s, and the timed call then ended before its request reached the server
    await provider.complete(call())
    with pytest.raises(ProviderTimeout, match=r"anthropic:claude-sonnet-4-6 timed out after 0\.3 s"):
        await provider.complete(call(timeout_s=0.3))
    record = await asyncio.wait_for(llm_server.wait_for_requests(2), 5)
    await asyncio.wait_for(record.done.wait(), 5)
    assert record.cancelled
    await provider.aclose()


async def test_cancelling_the_task_cancels_the_request(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text="slow " * 200, tokens_per_s=50))
    provider = make(llm_server)
    deltas: list[str] = []
    first = asyncio.Event()

    async def on_delta(text: str) -> None:
        deltas.append(text)
        first.set()

    task = asyncio.create_task(provider.complete(call(), on_delta))
    await asyncio.wait_for(first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    record = llm_server.requests[0]
    await asyncio.wait_for(record.done.wait(), 5)
    assert record.cancelled and len(deltas) < 200
    await provider.aclose()


async def test_stream_cut_mid_way_is_an_error(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text="Half an argument is no argument at all.", cut_after_chars=13))
    provider = make(llm_server)
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    with pytest.raises(ProviderError, match="broke off after 13 characters"):
        await provider.complete(call(), on_delta)
    await provider.aclose()
    assert "".join(deltas) == "Half an argum"


async def test_garbage_stream_is_bad_output(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(garbage=True))
    provider = make(llm_server)
    with pytest.raises(ProviderError) as info:
        await provider.complete(call())
    await provider.aclose()
    assert info.value.kind == "bad_output"


async def test_empty_reply_is_bad_output(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text=""))
    provider = make(llm_server)
    with pytest.raises(ProviderError, match="returned no text") as info:
        await provider.complete(call())
    await provider.aclose()
    assert info.value.kind == "bad_output"


async def test_sequential_calls_reuse_one_connection(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The body is read past message_stop to its end, so HTTP/1.1 keeps the connection for the next call.
    peers: set[object] = set()
    record = llm_server._record

    def spy(request: web.Request, api: str, body: dict[str, object]) -> object:
        peers.add(request.transport.get_extra_info("peername") if request.transport else None)
        return record(request, api, body)  # type: ignore[arg-type]

    monkeypatch.setattr(llm_server, "_record", spy)
    provider = make(llm_server)
    for _ in range(4):
        await provider.complete(call())
    await provider.aclose()
    assert len(llm_server.requests) == 4 and len(peers) == 1


# ---- bodies the fake server does not send, from a raw SSE endpoint ----


def _event(name: str, data: dict[str, object]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


START = _event("message_start", {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m", "stop_reason": None,
    "usage": {"input_tokens": 11, "output_tokens": 1}}})


def _text(piece: str) -> str:
    return _event("content_block_delta",
                  {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": piece}})


async def _complete_raw(body: str, deltas: list[str] | None = None) -> tuple[str, int, int]:
    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(body.encode())
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/messages", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    provider = AnthropicProvider(ANTHROPIC, api_key=KEY, base_url=url, max_retries=0)

    async def on_delta(text: str) -> None:
        if deltas is not None:
            deltas.append(text)

    try:
        result = await provider.complete(call(model="m"), on_delta)
        return result.text, result.input_tokens, result.output_tokens
    finally:
        await provider.aclose()
        await runner.cleanup()


async def test_thinking_is_skipped_and_usage_is_cumulative() -> None:
    body = (
        START
        + _event("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "thinking", "thinking": ""}})
        + _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "thinking_delta", "thinking": "hmm"}})
        + ": keep-alive comment\n\n"
        + _text("Seat A")
        + _event("ping", {"type": "ping"})
        + _text(" won.")
        + _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                   "usage": {"output_tokens": 42}})
        + _event("message_stop", {"type": "message_stop"})
    )
    deltas: list[str] = []
    assert await _complete_raw(body, deltas) == ("Seat A won.", 11, 42)
    assert "".join(deltas) == "Seat A won."


async def test_error_event_mid_stream_names_its_type_only() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": f"Overloaded (key {KEY})"}}
    deltas: list[str] = []
    with pytest.raises(ProviderError) as info:
        await _complete_raw(START + _text("Half") + _event("error", error), deltas)
    assert deltas == ["Half"]
    assert str(info.value) == "anthropic:m: the server reported an error mid-stream (overloaded_error)"
    assert info.value.kind == "error"


async def test_body_ending_without_stop_reason_is_an_early_end() -> None:
    with pytest.raises(ProviderError, match="ended early after 4 characters"):
        await _complete_raw(START + _text("Half") + _event("message_stop", {"type": "message_stop"}))


async def test_non_streaming_peer_answers_a_plain_message(llm_server: FakeLLMServer) -> None:
    provider = make(llm_server)
    message = await provider.client.messages.create(
        model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "ping"}]
    )
    await provider.aclose()
    assert message.content[0].text.startswith("As claude-haiku-4-5")  # type: ignore[union-attr]
    assert message.usage.input_tokens == 1 and not llm_server.requests[0].stream
