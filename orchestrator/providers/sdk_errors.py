"""SDK failures → ProviderError with a user-safe message, for both official SDKs.

The openai and anthropic SDKs are generated from one template, so their exception classes share names
(APIStatusError, RateLimitError, …); the module is passed in and the same rules apply to both.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import httpx2

from orchestrator.providers.base import Completion, ModelCall, ProviderError, ProviderTimeout
from orchestrator.providers.redact import estimate_tokens, redact, safe_host, seconds
from orchestrator.providers.sse import MalformedStream, StreamError

log = logging.getLogger(__name__)


@dataclass
class CallState:
    """What the call had done when it failed; decides how the failure reads."""

    label: str  # provider:model
    base_url: str | None
    timeout_s: float
    secrets: Iterable[str] = ()
    streaming: bool = False
    received: int = 0  # characters of text delivered before the failure
    deadline_expired: bool = False


def translate_error(
    exc: BaseException, sdk: ModuleType, state: CallState, status_line: Callable[[Any], str]
) -> BaseException | None:
    """The ProviderError for `exc`, or None when it is not a provider failure (re-raise it as is)."""
    label = state.label
    broke_off = ProviderError(f"{label} stream broke off after {state.received} characters")
    if isinstance(exc, TimeoutError):
        if not state.deadline_expired:
            return None
        return ProviderTimeout(f"{label} timed out after {seconds(state.timeout_s)} s")
    unreachable = _connect_failure(exc)
    if unreachable is not None and not state.received:
        return ProviderError(f"{label}: could not connect to {safe_host(state.base_url)} {unreachable}")
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderTimeout(f"{label} timed out waiting for {safe_host(state.base_url)}")
    if isinstance(exc, sdk.APIConnectionError):
        if not state.streaming:
            return ProviderError(f"{label}: could not connect to {safe_host(state.base_url)}")
        log.debug("%s: connection lost mid-stream: %s", label, type(exc.__cause__).__name__)
        return broke_off
    if isinstance(exc, sdk.APIStatusError):
        status = status_line(exc)
        log.debug("%s: %s", label, redact(str(exc.message), state.secrets))
        if isinstance(exc, sdk.AuthenticationError | sdk.PermissionDeniedError):
            return ProviderError(f"{label}: the API key was rejected ({status})", kind="auth")
        if isinstance(exc, sdk.RateLimitError):
            return ProviderError(f"{label}: rate limited ({status}) after retries", kind="rate_limit")
        if isinstance(exc, sdk.NotFoundError):
            return ProviderError(f"{label}: model or endpoint not found ({status})")
        return ProviderError(f"{label} failed: {status}")
    if isinstance(exc, StreamError):  # an `error` event inside the stream (read by orchestrator.providers.sse)
        log.debug("%s: stream error after %d chars: %s", label, state.received, redact(exc.detail, state.secrets))
        code = f" ({exc.code})" if exc.code else ""
        return ProviderError(f"{label}: the server reported an error mid-stream{code}")
    if isinstance(exc, sdk.APIError):  # the same, from the SDK's own stream classes
        log.debug("%s: stream error after %d chars: %s", label, state.received, redact(str(exc.message), state.secrets))
        return ProviderError(f"{label}: the server reported an error mid-stream")
    if isinstance(exc, httpx2.TimeoutException):  # the SDK's read timeout, raised while we read the body
        return ProviderTimeout(f"{label} timed out waiting for {safe_host(state.base_url)}")
    if isinstance(exc, httpx2.TransportError):
        log.debug("%s: transport error %s", label, type(exc).__name__)
        return broke_off
    if isinstance(exc, MalformedStream):
        return ProviderError(f"{label} returned a malformed stream ({exc})", kind="bad_output")
    if isinstance(exc, json.JSONDecodeError):
        return ProviderError(f"{label} returned a malformed stream (not JSON)", kind="bad_output")
    return None


def _connect_failure(exc: BaseException) -> str | None:
    """Why no connection was made, and what to do, when the cause chain says so: the SDKs' aiohttp transport reports a
    refused connection as a connect *timeout*, so the OS error inside decides, not the outer class."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "(connection refused): is the server running?"
        if isinstance(current, socket.gaierror):
            return "(the host name did not resolve): check the base URL"
        current = current.__cause__ or current.__context__
    return None


def completed_stream(
    label: str, parts: list[str], *, finished: bool, call: ModelCall, input_tokens: int, output_tokens: int,
    started: float,
) -> Completion:
    """The Completion of a stream that ended: no text or no stop reason is a failure; missing usage is
    estimated (about four characters a token), so totals are never zero."""
    text = "".join(parts)
    if not text:
        raise ProviderError(f"{label} returned no text", kind="bad_output")
    if not finished:
        raise ProviderError(f"{label} stream ended early after {len(text)} characters", input_tokens=input_tokens,
                            output_tokens=output_tokens)
    return Completion(
        text=text,
        input_tokens=input_tokens or estimate_tokens("".join(m.content for m in call.messages)),
        output_tokens=output_tokens or estimate_tokens(text),
        duration_ms=int((time.perf_counter() - started) * 1000),
        tokens_estimated=not (input_tokens and output_tokens),
    )
