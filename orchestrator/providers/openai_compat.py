"""OpenAI and every OpenAI-compatible server (Gemini, OpenRouter, Ollama, vLLM) through the `openai` SDK.

Presets (provider name → base URL and key):

    openai      OPENAI_BASE_URL or https://api.openai.com/v1, OPENAI_API_KEY
                (a base URL alone is enough: local servers often want no key)
    gemini      GEMINI_BASE_URL (Google's OpenAI-compatible endpoint), GEMINI_API_KEY
    openrouter  OPENROUTER_BASE_URL, OPENROUTER_API_KEY
    ollama      OLLAMA_BASE_URL (`/v1` appended to a bare root like http://localhost:11434), key "ollama"
    vllm        VLLM_BASE_URL, VLLM_API_KEY or "EMPTY"

A stream that breaks off before the model finished (no finish_reason) is an error, not a short
answer: the deltas already delivered stay delivered, and the ProviderError says how far it got.

The SDK sends the request (auth, base URL, retries before the stream starts, APIStatusError on a
non-2xx answer); the event stream itself is read with `orchestrator.providers.sse` as plain dicts,
not one pydantic ChatCompletionChunk per token.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import aclosing
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI

from orchestrator.config import Settings
from orchestrator.providers import sse
from orchestrator.providers.base import Completion, DeltaCallback, ModelCall
from orchestrator.providers.effort import budget, reasoning_effort
from orchestrator.providers.http import sdk_http_client
from orchestrator.providers.sdk_errors import CallState, completed_stream, translate_error

log = logging.getLogger(__name__)

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
PRESETS: tuple[str, ...] = ("openai", "gemini", "openrouter", "ollama", "vllm")


@dataclass(frozen=True, slots=True)
class OpenAIPreset:
    name: str
    base_url: str | None  # None: not configured
    api_key: str | None  # None: not configured
    needs: str  # the variable that makes this preset usable


def ollama_v1_url(url: str) -> str:
    """Ollama's OpenAI-compatible API lives under /v1; accept the bare root users usually set."""
    url = url.strip()
    if "://" not in url:
        url = f"http://{url}"
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return url.rstrip("/") + "/v1"
    return url


def preset_for(name: str, settings: Settings) -> OpenAIPreset:
    """Base URL and key for an OpenAI-compatible provider; None fields mean "not configured"."""
    if name == "openai":
        key = settings.openai_api_key
        if key is None and settings.openai_base_url:
            key = "not-needed"  # a local server behind OPENAI_BASE_URL
        return OpenAIPreset(name, settings.openai_base_url or OPENAI_DEFAULT_BASE_URL, key, "OPENAI_API_KEY")
    if name == "gemini":
        return OpenAIPreset(name, settings.gemini_base_url, settings.gemini_api_key, "GEMINI_API_KEY")
    if name == "openrouter":
        return OpenAIPreset(name, settings.openrouter_base_url, settings.openrouter_api_key, "OPENROUTER_API_KEY")
    if name == "ollama":
        url = ollama_v1_url(settings.ollama_base_url) if settings.ollama_base_url else None
        return OpenAIPreset(name, url, "ollama" if url else None, "OLLAMA_BASE_URL")
    if name == "vllm":
        url = settings.vllm_base_url
        return OpenAIPreset(name, url, (settings.vllm_api_key or "EMPTY") if url else None, "VLLM_BASE_URL")
    raise ValueError(f"no OpenAI-compatible preset named {name!r}; presets: {', '.join(PRESETS)}")


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


class OpenAICompatProvider:
    """One `AsyncOpenAI` client per provider instance, reused for every call."""

    def __init__(
        self,
        name: str,
        *,
        api_key: str,
        base_url: str,
        max_retries: int = 2,
        timeout_s: float = 240.0,
        secrets: tuple[str, ...] | list[str] = (),
    ) -> None:
        self.name = name
        self.base_url = base_url
        self._secrets = tuple(s for s in (*secrets, api_key) if s)
        self._client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout_s,
                                   http_client=sdk_http_client(openai, base_url, timeout_s))

    @classmethod
    def from_settings(cls, name: str, settings: Settings) -> OpenAICompatProvider:
        from orchestrator.providers.registry import ProviderNotConfiguredError

        preset = preset_for(name, settings)
        if not preset.base_url or not preset.api_key:
            raise ProviderNotConfiguredError(preset.needs)
        return cls(
            name,
            api_key=preset.api_key,
            base_url=preset.base_url,
            max_retries=settings.debate_max_retries,
            timeout_s=settings.debate_call_timeout,
            secrets=settings.secrets(),
        )

    @property
    def client(self) -> AsyncOpenAI:
        return self._client

    def _request(self, call: ModelCall) -> dict[str, Any]:
        limit = call.max_tokens or budget(self.name, call.effort)
        kwargs: dict[str, Any] = {
            "model": call.model,
            "messages": [{"role": m.role, "content": m.content} for m in call.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # OpenAI's reasoning models reject max_tokens; compatible servers all understand max_tokens,
        # not all of them max_completion_tokens.
        kwargs["max_completion_tokens" if self.name == "openai" else "max_tokens"] = limit
        effort = reasoning_effort(self.name, call.effort, call.model)
        if effort:
            kwargs["reasoning_effort"] = effort
        return kwargs

    async def complete(self, call: ModelCall, on_delta: DeltaCallback | None = None) -> Completion:
        label = f"{self.name}:{call.model}"
        started = time.perf_counter()
        parts: list[str] = []
        usage: dict[str, Any] | None = None
        finished = streaming = False
        try:
            async with asyncio.timeout(call.timeout_s) as deadline:
                # The SDK sends (and retries) the request and raises status errors; the body is ours to read.
                api = self._client.chat.completions.with_streaming_response
                async with api.create(**self._request(call)) as response:
                    streaming = True
                    chunks = response.iter_bytes()
                    done = False
                    async with aclosing(sse.events(chunks)) as events:
                        async for event, data in events:
                            if data.startswith("[DONE]"):
                                done = True
                                break
                            chunk = sse.loads(data)
                            if event == "error" or chunk.get("error"):
                                raise sse.stream_error(chunk)
                            if isinstance(chunk.get("usage"), dict):
                                usage = chunk["usage"]
                            choices = chunk.get("choices")
                            if not isinstance(choices, list):
                                continue
                            for choice in choices:
                                if not isinstance(choice, dict):
                                    continue
                                delta = choice.get("delta")
                                content = delta.get("content") if isinstance(delta, dict) else None
                                if content and isinstance(content, str):
                                    parts.append(content)
                                    if on_delta is not None:
                                        await on_delta(content)
                                if choice.get("finish_reason"):
                                    finished = True
                    if done:
                        await sse.drain(chunks)
        except Exception as exc:
            state = CallState(label=label, base_url=self.base_url, timeout_s=call.timeout_s, secrets=self._secrets,
                              streaming=streaming, received=sum(map(len, parts)),
                              deadline_expired=deadline.expired())
            error = translate_error(exc, openai, state, _status_line)
            if error is None:
                raise
            raise error from None

        return completed_stream(label, parts, finished=finished, call=call, started=started,
                                input_tokens=_count(usage, "prompt_tokens"),
                                output_tokens=_count(usage, "completion_tokens"))

    async def aclose(self) -> None:
        await self._client.close()
