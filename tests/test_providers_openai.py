"""The OpenAI-compatible provider through the real `openai` SDK against the loopback peer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.config import Settings
from orchestrator.providers import budget, endpoint_for, provider_spec, sse
from orchestrator.providers.base import Message, ModelCall, ProviderError, ProviderTimeout
from orchestrator.providers.openai_compat import OpenAICompatProvider
from orchestrator.providers.vendors.ollama import ollama_v1_url
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.providers_openai_harness import _raw_server

KEY = "sk-test-KEY-0123456789"


def make(server: FakeLLMServer, *, name: str = "openai", retries: int = 0) -> OpenAICompatProvider:
    return OpenAICompatProvider(provider_spec(name), api_key=KEY, base_url=server.openai_base_url, max_retries=retries)


def call(text: str = "Is Rust better than Go for CLIs?", *, model: str = "gpt-5", **kw: object) -> ModelCall:
    messages = (Message(role="system", content="You are a careful debater."), Message(role="user", content=text))
    return ModelCall(model=model, messages=messages, **kw)  # type: ignore[arg-type]


async def test_streams_deltas_in_order_and_reports_usage(llm_server: FakeLLMServer) -> None:
    reply = "Go compiles fast; Rust catches more bugs at compile time. Evidence: both ecosystems."
    llm_server.add_rule(Reply(text=reply, tokens_per_s=50))  # a word every 20 ms: reads of their own
    provider = make(llm_server)
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    result = await provider.complete(call(), on_delta)
    await provider.aclose()

    assert len(deltas) > 1  # streamed (a starved loop may read several words at once: their number varies)
    assert "".join(deltas) == result.text == reply
    record = llm_server.requests[0]
    # usage comes from the include_usage chunk: the peer counts ceil(chars / 4)
    assert result.input_tokens == -(-len(record.prompt_text) // 4)
    assert result.output_tokens == -(-len(reply) // 4)
    assert result.duration_ms >= 0
    assert record.api == "openai" and record.model == "gpt-5" and record.stream
    assert record.messages == [
        {"role": "system", "content": "You are a careful debater."},
        {"role": "user", "content": "Is Rust better than Go for CLIs?"},
    ]
    assert record.body["stream_options"] == {"include_usage": True}
    assert record.body["max_completion_tokens"] == budget("openai", "medium")
    assert record.body["reasoning_effort"] == "medium"
    assert record.headers["Authorization"] == f"Bearer {KEY}"


async def test_compatible_presets_send_max_tokens_and_no_reasoning_effort(llm_server: FakeLLMServer) -> None:
    provider = make(llm_server, name="ollama")
    result = await provider.complete(call(model="qwen3", effort="low", max_tokens=300))
    await provider.aclose()
    body = llm_server.requests[0].body
    assert result.text.startswith("As qwen3")
    assert body["max_tokens"] == 300 and "max_completion_tokens" not in body
    assert "reasoning_effort" not in body


async def test_client_is_created_once_and_reused(llm_server: FakeLLMServer) -> None:
    provider = make(llm_server)
    client = provider.client
    await asyncio.gather(*(provider.complete(call(f"question {i}")) for i in range(5)))
    assert provider.client is client
    assert len(llm_server.requests) == 5
    await provider.aclose()


async def test_rate_limit_then_success_is_retried_by_the_sdk(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(status=429), times=2)
    llm_server.add_rule(Reply(text="Third time lucky."))
    provider = make(llm_server, retries=2)
    result = await provider.complete(call())
    await provider.aclose()
    assert result.text == "Third time lucky."
    assert [r.status for r in llm_server.requests] == [429, 429, 200]


async def test_server_error_past_retries_hides_the_body_and_the_key(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(status=500, retry_after=0.01))
    provider = make(llm_server, retries=1)
    with pytest.raises(ProviderError) as info:
        await provider.complete(call())
    await provider.aclose()
    assert len(llm_server.requests) == 2
    message = str(info.value)
    assert "HTTP 500" in message and "openai:gpt-5" in message
    assert KEY not in message and "processing your request" not in message
    assert info.value.kind == "error"


async def test_rate_limit_past_retries_is_kind_rate_limit(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(status=429))
    provider = make(llm_server, retries=1)
    with pytest.raises(ProviderError) as info:
        await provider.complete(call())
    await provider.aclose()
    assert info.value.kind == "rate_limit"
    assert KEY not in str(info.value)


async def test_bad_key_is_kind_auth_without_the_key(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(status=401))
    provider = make(llm_server, retries=2)
    with pytest.raises(ProviderError) as info:
        await provider.complete(call())
    await provider.aclose()
    assert info.value.kind == "auth"
    assert len(llm_server.requests) == 1  # 401 is not retried
    assert KEY not in str(info.value) and "Incorrect API key" not in str(info.value)


async def test_hang_times_out_promptly_and_the_server_sees_the_disconnect(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text="Warm."), times=1)
    llm_server.add_rule(Reply(hang=True))
    provider = make(llm_server)
    await provider.complete(call())  # the connection open and the SDK's first-use work done: see the Anthropic twin
    with pytest.raises(ProviderTimeout) as info:
        await provider.complete(call(timeout_s=0.3))
    assert info.value.kind == "timeout"
    assert str(info.value) == "openai:gpt-5 timed out after 0.3 s"
    record = await asyncio.wait_for(llm_server.wait_for_requests(2), 5)
    await asyncio.wait_for(record.done.wait(), 5)
    assert record.cancelled
    await provider.aclose()


async def test_cancelling_the_task_cancels_the_request(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(hang=True))
    provider = make(llm_server)
    task = asyncio.create_task(provider.complete(call()))
    record = await asyncio.wait_for(llm_server.wait_for_requests(1), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(record.done.wait(), 5)
    assert record.cancelled
    await provider.aclose()


async def test_stream_cut_mid_way_is_an_error_after_the_partial_deltas(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text="The first part arrives, the rest never does.", cut_after_chars=14))
    provider = make(llm_server)
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    with pytest.raises(ProviderError) as info:
        await provider.complete(call(), on_delta)
    await provider.aclose()
    assert "".join(deltas) == "The first part"
    assert "broke off after 14 characters" in str(info.value)
    assert info.value.kind == "error"


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


async def test_connection_refused_names_the_host_only() -> None:
    async with FakeLLMServer() as server:
        url = server.openai_base_url
    provider = OpenAICompatProvider(
        provider_spec("vllm"), api_key=KEY, base_url=url.replace("http://", "http://u:pw@"), max_retries=0
    )
    with pytest.raises(ProviderError) as info:
        await provider.complete(call(model="m"))
    await provider.aclose()
    assert "could not connect to http://127.0.0.1" in str(info.value)
    assert "pw" not in str(info.value)


async def test_parallel_calls_overlap(llm_server: FakeLLMServer) -> None:
    llm_server.add_rule(Reply(text="one two three four five six", tokens_per_s=60))
    provider = make(llm_server)
    await asyncio.gather(*(provider.complete(call(f"q{i}")) for i in range(4)))
    await provider.aclose()
    records = llm_server.requests
    assert max(r.started_at for r in records) < min(r.finished_at or 0 for r in records)


async def test_sequential_calls_reuse_one_connection(
    llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The body is read past [DONE] to its end, so HTTP/1.1 keeps the connection for the next call.
    peers: set[object] = set()
    record = llm_server._record

    def spy(request: web.Request, api: str, body: dict[str, object]) -> object:
        peers.add(request.transport.get_extra_info("peername") if request.transport else None)
        return record(request, api, body)  # type: ignore[arg-type]

    monkeypatch.setattr(llm_server, "_record", spy)
    provider = make(llm_server)
    for i in range(4):
        await provider.complete(call(f"q{i}"))
    await provider.aclose()
    assert len(llm_server.requests) == 4 and len(peers) == 1


# ---- the SSE reader (orchestrator.providers.sse), shared with the Anthropic provider ----


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _events(*parts: bytes) -> list[tuple[str, str]]:
    return [e async for batch in sse.batches(_chunks(*parts)) for e in batch]


async def test_sse_reader_splits_events_across_any_chunking() -> None:
    body = 'event: a\r\ndata: {"x": 1}\r\n\r\n: a comment\nid: 7\nretry: 10\ndata: one\ndata:two\n\rdata: ü\r\r'
    whole = body.encode()
    expected = [("a", '{"x": 1}'), ("", "one\ntwo"), ("", "ü")]
    assert await _events(whole) == expected
    # every split point, including inside CRLF pairs and inside the two-byte ü
    for cut in range(1, len(whole)):
        assert await _events(whole[:cut], whole[cut:]) == expected, cut
    assert await _events(*(whole[i:i + 1] for i in range(len(whole)))) == expected


async def test_sse_reader_splits_lines_only_at_cr_and_lf() -> None:
    # Servers that do not escape non-ASCII send U+2028/U+0085 raw inside JSON strings;
    # str.splitlines (and so httpx's aiter_lines) would cut the event there.
    text = "line\u2028sep\x85next\x0cff"
    data = json.dumps({"content": text}, ensure_ascii=False)
    assert await _events(f"data: {data}\n\n".encode()) == [("", data)]
    assert sse.loads(data) == {"content": text}


async def test_sse_reader_drops_an_event_the_body_cut_short() -> None:
    assert await _events(b"data: 1\n\ndata: 2\n") == [("", "1")]
    assert await _events(b"data: 1\n\ndata: 2") == [("", "1")]
    assert await _events(b"") == []


async def test_sse_reader_skips_events_with_empty_data() -> None:
    assert await _events(b"event: ping\n\ndata:\n\nevent: x\ndata: \n\ndata:\ndata:\n\n") == [("", "\n")]


def test_sse_loads_wants_a_json_object() -> None:
    assert sse.loads('{"a": [1]}') == {"a": [1]}
    with pytest.raises(sse.MalformedStream, match="not JSON"):
        sse.loads("{nope")
    with pytest.raises(sse.MalformedStream, match="not a JSON object"):
        sse.loads("[1, 2]")


def test_sse_stream_error_quotes_only_a_safe_code() -> None:
    error = sse.stream_error({"error": {"message": "key sk-123 is bad", "type": "server_error", "code": None}})
    assert (error.code, error.detail) == ("server_error", "key sk-123 is bad")
    assert sse.stream_error({"error": {"code": "has spaces in it", "message": "m"}}).code is None
    assert sse.stream_error({"error": "just text"}).detail == "just text"


# ---- bodies the fake server does not send, from a raw SSE endpoint ----


def _chunk(delta: dict[str, object], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [choice]},
                                 ensure_ascii=False) + "\r\n\r\n"


async def _complete_raw(body: str, deltas: list[str] | None = None) -> str:
    runner, url = await _raw_server(body.encode())
    provider = OpenAICompatProvider(provider_spec("vllm"), api_key=KEY, base_url=url, max_retries=0)

    async def on_delta(text: str) -> None:
        if deltas is not None:
            deltas.append(text)

    try:
        return (await provider.complete(call(model="m"), on_delta)).text
    finally:
        await provider.aclose()
        await runner.cleanup()


async def test_crlf_stream_with_raw_unicode_separators_and_no_usage() -> None:
    pieces = ["Go\u2028", "is fine\x85", " — ok"]
    body = "".join(_chunk({"content": p}) for p in pieces) + _chunk({}, "stop") + "data: [DONE]\r\n\r\n"
    deltas: list[str] = []
    assert await _complete_raw(body, deltas) == "".join(deltas) == "".join(pieces)


async def test_events_that_arrive_together_are_handed_on_together() -> None:
    pieces = [f"piece {i} " for i in range(20)]
    body = "".join(_chunk({"content": p}) for p in pieces) + _chunk({}, "stop") + "data: [DONE]\n\n"
    deltas: list[str] = []
    assert await _complete_raw(body, deltas) == "".join(deltas) == "".join(pieces)
    assert len(deltas) <= 3  # the server writes the body in two halves: one piece a read, not one an event


async def test_error_event_mid_stream_is_an_error_without_its_text() -> None:
    error = {"error": {"message": f"upstream overloaded (key {KEY})", "type": "server_error", "code": None}}
    body = _chunk({"content": "Partial "}) + f"data: {json.dumps(error)}\n\n"
    deltas: list[str] = []
    with pytest.raises(ProviderError) as info:
        await _complete_raw(body, deltas)
    assert deltas == ["Partial "]
    assert str(info.value) == "vllm:m: the server reported an error mid-stream (server_error)"
    assert info.value.kind == "error"


async def test_json_that_is_not_an_object_is_bad_output() -> None:
    with pytest.raises(ProviderError, match=r"malformed stream \(not a JSON object\)") as info:
        await _complete_raw(_chunk({"content": "x"}) + "data: [1, 2]\n\n")
    assert info.value.kind == "bad_output"


async def test_body_ending_without_finish_reason_is_an_early_end() -> None:
    with pytest.raises(ProviderError, match="ended early after 5 characters"):
        await _complete_raw(_chunk({"content": "Hello"}) + "data: [DONE]\n\n")


async def test_a_stream_that_goes_silent_hits_the_sdk_read_timeout() -> None:
    body = _chunk({"content": "Some words "}) + _chunk({"content": "and more"}) + _chunk({}, "stop")
    runner, url = await _raw_server(body.encode(), stall_s=3.0)
    provider = OpenAICompatProvider(provider_spec("vllm"), api_key=KEY, base_url=url, max_retries=0, timeout_s=0.3)
    try:
        with pytest.raises(ProviderTimeout, match=r"^vllm:m timed out waiting for http://127\.0\.0\.1:\d+$"):
            await provider.complete(call(model="m", timeout_s=10))
    finally:
        await provider.aclose()
        await runner.cleanup()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://localhost:11434", "http://localhost:11434/v1"),
        ("http://localhost:11434/", "http://localhost:11434/v1"),
        ("localhost:11434", "http://localhost:11434/v1"),
        ("http://gpu-box:11434/v1", "http://gpu-box:11434/v1"),
        ("https://proxy.example/ollama/v1", "https://proxy.example/ollama/v1"),
    ],
)
def test_ollama_url_gets_v1(raw: str, expected: str) -> None:
    assert ollama_v1_url(raw) == expected


def test_presets_resolve_base_urls_and_keys() -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        OPENAI_API_KEY="sk-o",
        GEMINI_API_KEY="g-key",
        OPENROUTER_API_KEY="or-key",
        OLLAMA_BASE_URL="http://localhost:11434",
        VLLM_BASE_URL="http://gpu:8000/v1",
    )
    openai = endpoint_for("openai", settings)
    assert (openai.base_url, openai.api_key) == ("https://api.openai.com/v1", "sk-o")
    gemini = endpoint_for("gemini", settings)
    assert gemini.base_url == "https://generativelanguage.googleapis.com/v1beta/openai/"
    assert gemini.api_key == "g-key"
    assert endpoint_for("openrouter", settings).base_url == "https://openrouter.ai/api/v1"
    assert (endpoint_for("ollama", settings).base_url, endpoint_for("ollama", settings).api_key) == (
        "http://localhost:11434/v1",
        "ollama",
    )
    assert (endpoint_for("vllm", settings).base_url, endpoint_for("vllm", settings).api_key) == (
        "http://gpu:8000/v1",
        "EMPTY",
    )


def test_openai_base_url_alone_is_enough_for_local_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = Settings(_env_file=None, OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # type: ignore[call-arg]
    endpoint = endpoint_for("openai", settings)
    assert endpoint.base_url == "http://127.0.0.1:9/v1" and endpoint.api_key


async def test_the_messages_reach_the_peer_without_the_sdk_walking_them(llm_server: FakeLLMServer,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's typed-dict walk over every message was a worker's largest single CPU cost per call."""
    from openai.resources.chat.completions import completions

    walked: list[object] = []
    real = completions.async_maybe_transform

    async def recording(data: object, expected_type: object) -> object:
        if isinstance(data, dict):
            walked.append(data.get("messages"))
        return await real(data, expected_type)

    monkeypatch.setattr(completions, "async_maybe_transform", recording)
    llm_server.add_rule(Reply(text="Short answer."))
    provider = make(llm_server)
    long = "Round 1, the proposer said: " + "evidence " * 2000
    result = await provider.complete(call(long))
    await provider.aclose()

    assert result.text == "Short answer."
    assert llm_server.requests[0].messages == [
        {"role": "system", "content": "You are a careful debater."}, {"role": "user", "content": long}]
    assert walked == [[]]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(value=JSON_VALUES, before=st.sampled_from(["", " ", "\n", "x"]),
       after=st.sampled_from(["", " ", "\t", "}", ","]))
def test_sse_loads_reads_an_events_data_as_json_loads_does(value: object, before: str, after: str) -> None:
    data = before + json.dumps(value, ensure_ascii=False) + after
    try:
        expected: object = json.loads(data)
    except json.JSONDecodeError:
        expected = sse.MalformedStream
    if expected is not sse.MalformedStream and not isinstance(expected, dict):
        expected = sse.MalformedStream
    try:
        got: object = sse.loads(data)
    except sse.MalformedStream:
        got = sse.MalformedStream
    assert got == expected
