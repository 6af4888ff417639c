"""Anthropic's Messages API through the official `anthropic` SDK (2.x).

System messages go to `system=`; the rest must alternate user/assistant and start with a user turn,
so consecutive same-role messages are merged and a leading assistant turn gets a short user turn
before it. No temperature/top_p/top_k keywords: SDK 1.0+ removed them.

A stream that ends without a stop_reason broke off: that is an error, not a short answer.

The SDK sends the request (auth, retries before the stream starts, APIStatusError on a non-2xx
answer); the events are read with `orchestrator.providers.sse` as plain dicts: message_start (input
tokens), text_delta (text; thinking deltas are skipped), message_delta (stop_reason, cumulative
usage), message_stop, error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import aclosing
from http import HTTPStatus
from typing import Any

import anthropic
from anthropic import AsyncAnthropic

from orchestrator.config import Settings
from orchestrator.metrics import provider_label
from orchestrator.providers import sse
from orchestrator.providers.base import Completion, DeltaCallback, Message, ModelCall
from orchestrator.providers.http import call_timeout, sdk_http_client
from orchestrator.providers.paced_read import unpace
from orchestrator.providers.sdk_errors import CallState, completed_stream, translate_error
from orchestrator.providers.spec import ProviderSpec

log = logging.getLogger(__name__)

ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
_LEADING_USER = "Continue."


def to_anthropic(messages: tuple[Message, ...] | list[Message]) -> tuple[str | None, list[dict[str, str]]]:
    """Split out the system text and merge turns into the strict alternation the API requires."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content.strip())
    turns: list[dict[str, str]] = []
    for m in messages:
        if m.role == "system":
            continue
        if turns and turns[-1]["role"] == m.role:
            turns[-1]["content"] += "\n\n" + m.content
        else:
            turns.append({"role": m.role, "content": m.content})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": _LEADING_USER})
    return system or None, turns


def _status_line(exc: anthropic.APIStatusError) -> str:
    try:
        phrase = HTTPStatus(exc.status_code).phrase
    except ValueError:
        phrase = ""
    kind = exc.type if isinstance(exc.type, str) and exc.type.replace("_", "").isalnum() else None
    return f"HTTP {exc.status_code} {phrase}".rstrip() + (f" ({kind})" if kind else "")


def _count(usage: object, key: str) -> int:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and value > 0 else 0


def _delta_text(payload: dict[str, Any]) -> str | None:
    """The text a content_block_delta event carries: a text delta's, or a forced tool's partial JSON."""
    delta = payload.get("delta")
    if not isinstance(delta, dict):
        return None
    kind = delta.get("type")
    if kind not in ("text_delta", "input_json_delta"):
        return None
    piece = delta.get("text" if kind == "text_delta" else "partial_json")
    return piece if isinstance(piece, str) else None


class AnthropicProvider:
    """One `AsyncAnthropic` client per provider instance, reused for every call."""

    def __init__(
        self,
        spec: ProviderSpec,
        *,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout_s: float = 240.0,
        secrets: tuple[str, ...] | list[str] = (),
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.base_url = base_url or ANTHROPIC_DEFAULT_BASE_URL
        self._secrets = tuple(s for s in (*secrets, api_key) if s)
        self._timeout_s = timeout_s
        self._client = AsyncAnthropic(
            api_key=api_key, base_url=self.base_url, max_retries=max_retries, timeout=timeout_s,
            http_client=sdk_http_client(anthropic, self.base_url, timeout_s, provider_label(spec.name)),
        )

    @classmethod
    def from_settings(cls, spec: ProviderSpec, settings: Settings) -> AnthropicProvider:
        return cls(spec, **spec.client_arguments(settings))  # type: ignore[arg-type]

    @property
    def client(self) -> AsyncAnthropic:
        return self._client

    async def complete(self, call: ModelCall, on_delta: DeltaCallback | None = None) -> Completion:
        label = f"{self.name}:{call.model}"
        started = time.perf_counter()
        system, turns = to_anthropic(call.messages)
        kwargs: dict[str, Any] = {
            "model": call.model,
            "max_tokens": call.max_tokens or self.spec.budget(call.effort),
            "messages": turns,
            "timeout": call_timeout(anthropic, self._timeout_s, call.timeout_s),
        }
        if system:
            kwargs["system"] = system
        if call.answer_schema is not None:  # a forced tool: its input is the answer, in the schema's shape
            answer = call.answer_schema
            kwargs["tools"] = [{"name": answer.name, "description": answer.description or answer.name,
                                "input_schema": answer.json_schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": answer.name}
        text = sse.ArrivedText(on_delta)
        streaming = False
        stop_reason: str | None = None
        input_tokens = output_tokens = 0
        try:
            async with asyncio.timeout(call.timeout_s) as deadline:
                # The SDK sends (and retries) the request and raises status errors; the body is ours to read.
                api = self._client.messages.with_streaming_response
                async with api.create(**kwargs, stream=True) as response:
                    streaming = True
                    chunks = sse.body(response, call.read_every_s)
                    done = False
                    async with aclosing(sse.batches(chunks)) as batches:
                        async for batch in batches:
                            for event, data in batch:
                                if event == "ping":
                                    continue
                                payload = sse.loads(data)
                                kind = payload.get("type") or event
                                if kind == "content_block_delta":
                                    piece = _delta_text(payload)
                                    if piece:
                                        text.add(piece)
                                elif kind == "message_start":
                                    message = payload.get("message")
                                    usage = message.get("usage") if isinstance(message, dict) else None
                                    input_tokens = _count(usage, "input_tokens") or input_tokens
                                    output_tokens = _count(usage, "output_tokens") or output_tokens
                                elif kind == "message_delta":
                                    delta = payload.get("delta")
                                    reason = delta.get("stop_reason") if isinstance(delta, dict) else None
                                    if reason and isinstance(reason, str):
                                        stop_reason = reason
                                        unpace(chunks)  # message_stop follows: read at once
                                    usage = payload.get("usage")  # cumulative
                                    input_tokens = _count(usage, "input_tokens") or input_tokens
                                    output_tokens = _count(usage, "output_tokens") or output_tokens
                                elif kind == "message_stop":
                                    done = True
                                    break
                                elif kind == "error":
                                    await text.flush()
                                    raise sse.stream_error(payload)
                            await text.flush()
                            if done:
                                break
                    if done:
                        await sse.drain(chunks)
        except Exception as exc:
            state = CallState(label=label, base_url=self.base_url, timeout_s=call.timeout_s, secrets=self._secrets,
                              streaming=streaming, received=sum(map(len, text.parts)),
                              deadline_expired=deadline.expired())
            error = translate_error(exc, anthropic, state, _status_line)
            if error is None:
                raise
            raise error from None

        return completed_stream(label, text.parts, finished=stop_reason is not None, call=call,
                                input_tokens=input_tokens, output_tokens=output_tokens, started=started)

    async def aclose(self) -> None:
        await self._client.close()
