"""The backend for OpenAI and every OpenAI-compatible server (Gemini, OpenRouter, Ollama, vLLM): the `openai` SDK.

Everything that differs between those vendors (base URL and key, budgets, what the output cap is called, reasoning
effort) comes from the vendor's ProviderSpec (orchestrator.providers.vendors). The SDK sends the request (auth,
retries before the stream starts, APIStatusError on a non-2xx answer); the event stream itself is read with
`orchestrator.providers.sse` as plain dicts, not one pydantic ChatCompletionChunk per token.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import aclosing
from http import HTTPStatus
from typing import Any

import openai
from openai import AsyncOpenAI

from orchestrator.config import Settings
from orchestrator.metrics import provider_label
from orchestrator.providers import sse
from orchestrator.providers.base import Completion, DeltaCallback, ModelCall, ProviderError
from orchestrator.providers.http import call_timeout, sdk_http_client
from orchestrator.providers.paced_read import unpace
from orchestrator.providers.sdk_errors import CallState, completed_stream, translate_error
from orchestrator.providers.spec import ProviderSpec

log = logging.getLogger(__name__)

def _status_line(exc: openai.APIStatusError) -> str:
    """`HTTP 500 Internal Server Error (server_error)`: the status and a code, never the body text."""
    try:
        phrase = HTTPStatus(exc.status_code).phrase
    except ValueError:
        phrase = ""
    code = ""
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            for key in ("code", "type"):
                value = err.get(key)
                if isinstance(value, str) and value.replace("_", "").isalnum() and len(value) <= 40:
                    code = f" ({value})"
                    break
    return f"HTTP {exc.status_code} {phrase}".rstrip() + code


def _count(usage: dict[str, Any] | None, key: str) -> int:
    value = usage.get(key) if usage else None
    return value if isinstance(value, int) and value > 0 else 0


def _take_choices(chunk: dict[str, Any], text: sse.ArrivedText) -> str | None:
    """The text of a chunk's choices added to `text`; the finish reason when one of them finished."""
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return None
    finished: str | None = None
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        content = delta.get("content") if isinstance(delta, dict) else None
        if content and isinstance(content, str):
            text.add(content)
        reason = choice.get("finish_reason")
        if reason:
            finished = str(reason)
    return finished


def _error_body(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    return body if isinstance(body, dict) else {}


_CONTEXT_CODES = ("exceed_context_size_error", "context_length_exceeded")
_SCHEMA_WORDS = ("response_format", "json_schema", "schema", "grammar")


def context_overflow(exc: BaseException, label: str) -> ProviderError | None:
    """A prompt longer than the model's context (llama.cpp's 400 `exceed_context_size_error`, OpenAI's
    `context_length_exceeded`) as one clear error, with the sizes when the server gave them."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code != 400:
        return None
    body = _error_body(exc)
    if not ({str(body.get("type")), str(body.get("code"))} & set(_CONTEXT_CODES)):
        return None
    prompt, context = body.get("n_prompt_tokens"), body.get("n_ctx")
    if isinstance(prompt, int) and isinstance(context, int):
        sizes = f" ({prompt:,} tokens; the model's context holds {context:,})"
    else:
        sizes = ""
    return ProviderError(f"{label}: the prompt is longer than the model's context{sizes}", kind="context")


def refused_schema(exc: BaseException) -> bool:
    """Whether a host refused the request for its `response_format` (a server with no structured-output
    mode, or one that cannot turn this schema into a grammar)."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
        return False
    body = _error_body(exc)
    if {str(body.get("type")), str(body.get("code"))} & set(_CONTEXT_CODES):
        return False
    words = " ".join(str(body.get(key) or "") for key in ("param", "message", "detail")) + " " + str(exc.message)
    return any(word in words.lower() for word in _SCHEMA_WORDS)


class _SchemaRefused(Exception):
    """The host refused the call's `response_format` before streaming anything."""


class OpenAICompatProvider:
    """One `AsyncOpenAI` client per provider instance, reused for every call."""

    def __init__(
        self,
        spec: ProviderSpec,
        *,
        api_key: str,
        base_url: str,
        max_retries: int = 2,
        timeout_s: float = 240.0,
        secrets: tuple[str, ...] | list[str] = (),
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.base_url = base_url
        self._secrets = tuple(s for s in (*secrets, api_key) if s)
        self._timeout_s = timeout_s
        self._refuses_schema: set[str] = set()  # models whose host refused `response_format` json_schema
        self._client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout_s,
                                   http_client=sdk_http_client(openai, base_url, timeout_s, provider_label(spec.name)))

    @classmethod
    def from_settings(cls, spec: ProviderSpec, settings: Settings) -> OpenAICompatProvider:
        return cls(spec, **spec.client_arguments(settings, needs_base_url=True))  # type: ignore[arg-type]

    @property
    def client(self) -> AsyncOpenAI:
        return self._client

    def _request(self, call: ModelCall, structured: bool) -> dict[str, Any]:
        # Everything but the model and `stream` goes in `extra_body`, which the SDK sends as given: as arguments
        # it walks each against its typed-dict shapes first (openai's `async_transform`; the messages against
        # the union of every message shape), which cost more of a worker's CPU than reading the whole streamed
        # answer. The JSON sent is the same.
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in call.messages],
            "stream_options": {"include_usage": True},
            self.spec.max_tokens_field: call.max_tokens or self.spec.budget(call.effort),
        }
        effort = self.spec.reasoning_effort(call.effort, call.model) if self.spec.reasoning_effort else None
        if effort:
            body["reasoning_effort"] = effort
        if structured:
            answer = call.answer_schema
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": answer.name, "description": answer.description, "strict": True, "schema": answer.json_schema}}
        return {"model": call.model, "messages": [], "stream": True, "extra_body": body,
                "timeout": call_timeout(openai, self._timeout_s, call.timeout_s)}

    def structured(self, call: ModelCall) -> bool:
        """Whether `call` is sent with `response_format` json_schema: where the spec says the host takes it
        (OpenAI, Gemini, vLLM, Ollama, llama.cpp), unless this model's host refused it before."""
        return call.answer_schema is not None and self.spec.json_schema and call.model not in self._refuses_schema

    async def complete(self, call: ModelCall, on_delta: DeltaCallback | None = None) -> Completion:
        """Stream one answer. A host that refuses the structured-output request is asked again without it
        (the caller reads whatever shape comes back, as from a host that has none), and not asked with it again."""
        try:
            return await self._complete(call, on_delta)
        except _SchemaRefused:
            log.info("%s:%s refused response_format json_schema; asking without it", self.name, call.model)
            self._refuses_schema.add(call.model)
            return await self._complete(call, on_delta)

    async def _complete(self, call: ModelCall, on_delta: DeltaCallback | None = None) -> Completion:
        """One streamed answer. A stream that breaks off before the model finished (no finish_reason) is a
        ProviderError saying how far it got, not a short answer (the deltas delivered stay delivered); one the
        model ended at its token limit (finish_reason `length`) is a Completion marked `cut`."""
        label = f"{self.name}:{call.model}"
        started = time.perf_counter()
        text = sse.ArrivedText(on_delta)
        usage: dict[str, Any] | None = None
        finished: str | None = None
        streaming = False
        structured = self.structured(call)
        try:
            async with asyncio.timeout(call.timeout_s) as deadline:
                # The SDK sends (and retries) the request and raises status errors; the body is ours to read.
                api = self._client.chat.completions.with_streaming_response
                async with api.create(**self._request(call, structured)) as response:
                    streaming = True
                    chunks = sse.body(response, call.read_every_s)
                    done = False
                    async with aclosing(sse.batches(chunks)) as batches:
                        async for batch in batches:
                            for event, data in batch:
                                if data.startswith("[DONE]"):
                                    done = True
                                    break
                                chunk = sse.loads(data)
                                if event == "error" or chunk.get("error"):
                                    await text.flush()
                                    raise sse.stream_error(chunk)
                                if isinstance(chunk.get("usage"), dict):
                                    usage = chunk["usage"]
                                finished = _take_choices(chunk, text) or finished
                                if finished:
                                    unpace(chunks)  # what follows is the usage and [DONE]: read at once
                            await text.flush()
                            if done:
                                break
                    if done:
                        await sse.drain(chunks)
        except Exception as exc:
            if not streaming and structured and refused_schema(exc):
                raise _SchemaRefused from None
            overflow = context_overflow(exc, label)
            if overflow is not None:
                raise overflow from None
            state = CallState(label=label, base_url=self.base_url, timeout_s=call.timeout_s, secrets=self._secrets,
                              streaming=streaming, received=sum(map(len, text.parts)),
                              deadline_expired=deadline.expired())
            error = translate_error(exc, openai, state, _status_line)
            if error is None:
                raise
            raise error from None

        completion = completed_stream(label, text.parts, finished=finished is not None, call=call, started=started,
                                      input_tokens=_count(usage, "prompt_tokens"),
                                      output_tokens=_count(usage, "completion_tokens"))
        return completion.model_copy(update={"cut": True}) if finished == "length" else completion

    async def aclose(self) -> None:
        await self._client.close()
