"""A streamed answer read at most every `read_every_s` (orchestrator/providers/paced_read.py), through both
real SDKs against loopback HTTP servers: the tokens that land between reads come in one read, the whole text
still arrives, a paced connection goes back to the pool and serves the next call, and once the final event
is in the tail is read at once rather than after another wait."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from aiohttp import web

from orchestrator.providers import provider_spec
from orchestrator.providers.anthropic_api import AnthropicProvider
from orchestrator.providers.base import Message, ModelCall, ProviderError
from orchestrator.providers.openai_compat import OpenAICompatProvider
from tests.fakes.llm_server import FakeLLMServer, Reply

KEY = "sk-test-KEY-0123456789"
WORDS = 40
REPLY = " ".join(f"word{i}" for i in range(WORDS))
EVERY_S = 0.1
MODELS = {"openai": "gpt-5", "anthropic": "claude-sonnet-4-5"}


def provider_for(kind: str, base_url: str) -> Any:
    if kind == "openai":
        return OpenAICompatProvider(provider_spec("openai"), api_key=KEY, base_url=base_url, max_retries=0)
    return AnthropicProvider(provider_spec("anthropic"), api_key=KEY, base_url=base_url, max_retries=0)


def the_call(kind: str, every_s: float, timeout_s: float = 240.0) -> ModelCall:
    return ModelCall(model=MODELS[kind], messages=(Message(role="user", content="Is Rust better than Go for CLIs?"),),
                     read_every_s=every_s, timeout_s=timeout_s)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_tokens_that_land_between_reads_come_in_one_read(llm_server: FakeLLMServer, kind: str) -> None:
    llm_server.add_rule(Reply(text=REPLY, tokens_per_s=200))  # a word every 5 ms: unpaced, most in reads of their own
    base_url = llm_server.openai_base_url if kind == "openai" else llm_server.anthropic_base_url
    provider = provider_for(kind, base_url)
    peers: set[object] = set()
    record = llm_server._record

    def spy(request: web.Request, api: str, body: dict[str, object]) -> object:
        peers.add(request.transport.get_extra_info("peername") if request.transport else None)
        return record(request, api, body)  # type: ignore[arg-type]

    llm_server._record = spy  # type: ignore[method-assign]
    pieces: list[list[str]] = []
    try:
        for _ in range(2):
            got: list[str] = []

            async def on_delta(text: str, _got: list[str] = got) -> None:
                _got.append(text)

            began = time.monotonic()
            completion = await provider.complete(the_call(kind, EVERY_S, timeout_s=20), on_delta)
            elapsed = time.monotonic() - began
            assert completion.text == REPLY and "".join(got) == REPLY
            # one read per EVERY_S at most, the first at once: a stream of elapsed seconds is read in few pieces
            assert len(got) <= elapsed / EVERY_S + 2, (len(got), elapsed)
            pieces.append(got)
    finally:
        await provider.aclose()
    assert len(peers) == 1  # the paced connection went back to the pool and carried the second call


def _openai_parts() -> tuple[str, str]:
    def chunk(delta: dict[str, object], finish: str | None = None) -> str:
        return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk",
                                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

    head = chunk({"role": "assistant", "content": "Go, "}) + chunk({"content": "for the binary."}) + chunk({}, "stop")
    usage = {"id": "c", "object": "chat.completion.chunk", "choices": [],
             "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}}
    return head, "data: " + json.dumps(usage) + "\n\ndata: [DONE]\n\n"


def _anthropic_parts() -> tuple[str, str]:
    def event(name: str, data: dict[str, object]) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

    head = (event("message_start", {"message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                                "model": "m", "stop_reason": None,
                                                "usage": {"input_tokens": 9, "output_tokens": 1}}})
            + event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
            + event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Go, "}})
            + event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "for the binary."}})
            + event("content_block_stop", {"index": 0})
            + event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}))
    return head, event("message_stop", {})


async def _staged_server(head: str, tail: str, stall_s: float) -> tuple[web.AppRunner, str]:
    """Both APIs' paths answer `head`, then `stall_s` of silence, then `tail` and the body's end."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(head.encode())
        await asyncio.sleep(stall_s)
        await resp.write(tail.encode())
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    app.router.add_post("/v1/messages", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_after_the_final_event_the_tail_is_read_without_waiting(kind: str) -> None:
    """The final event (finish_reason / stop_reason) arrives, then the tail a moment later. Paced at 60 s a
    read, a reader that kept pacing would sit out the call's 10 s deadline."""
    head, tail = _openai_parts() if kind == "openai" else _anthropic_parts()
    runner, url = await _staged_server(head, tail, stall_s=0.2)
    provider = provider_for(kind, url + "/v1" if kind == "openai" else url)
    try:
        completion = await provider.complete(the_call(kind, every_s=60.0, timeout_s=10))
    except ProviderError as exc:  # pragma: no cover - the failure this test exists for
        pytest.fail(f"the tail waited for the pace: {exc}")
    finally:
        await provider.aclose()
        await runner.cleanup()
    assert completion.text == "Go, for the binary."
    assert completion.output_tokens == 4


async def test_a_debates_calls_are_read_at_its_pace(llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine asks every call of a debate (turns and the judge's) to be read at its TextPace's `read_every`,
    and the provider reads the body that way (a durable stream's pace: orchestrator/durable/workflow.py)."""
    from orchestrator.debate.deltas import READ_EVERY_S
    from orchestrator.durable.workflow import STREAM_PACE
    from orchestrator.providers import paced_read
    from tests.debate_harness import make_spec, run_debate

    assert STREAM_PACE.read_every == READ_EVERY_S > 0
    paces: list[float] = []
    real = paced_read.PacedRead.__init__

    def spy(self: paced_read.PacedRead, raw: Any, errors: Any, every_s: float = 0.0) -> None:
        paces.append(every_s)
        real(self, raw, errors, every_s)

    monkeypatch.setattr(paced_read.PacedRead, "__init__", spy)
    llm_server.add_rule(Reply(text="A short, complete answer for this turn.", tokens_per_s=400))
    result = await run_debate(llm_server, make_spec("challenge", rounds=1))
    assert result.outcome.status == "completed"
    assert len(paces) == len(llm_server.requests) >= 3 and set(paces) == {READ_EVERY_S}


def test_a_loop_that_wakes_late_reads_without_waiting_for_a_while_then_tries_again() -> None:
    from orchestrator.providers.paced_read import QUIET_S, LoopLag

    lag = LoopLag()
    for t in range(100):  # on time, give or take a few ms: keeps pacing
        lag.woke(0.004, now=t * 0.05, every_s=0.05)
        assert not lag.busy(t * 0.05)
    woke_at = None
    for t in range(100):  # every wake-up 80 ms late: a loaded loop
        lag.woke(0.08, now=10 + t * 0.05, every_s=0.05)
        if lag.busy(10 + t * 0.05):
            woke_at = 10 + t * 0.05
            break
    assert woke_at is not None and woke_at < 12  # within 2 s of the lateness starting
    assert lag.busy(woke_at + QUIET_S / 2)
    assert not lag.busy(woke_at + QUIET_S)  # then the waits are tried again
    lag.woke(0.004, now=woke_at + QUIET_S, every_s=0.05)
    assert not lag.busy(woke_at + QUIET_S)
