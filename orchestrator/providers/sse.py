"""Server-sent events read straight off an SDK's raw streaming response, parsed with `json.loads`.

The openai and anthropic SDKs still build the request, authenticate, retry 408/409/429/5xx before the
stream starts and raise their APIStatusError subclasses (`with_streaming_response`); only the body is
read here. Their own stream classes build a pydantic model per event, which cost ~35x a `json.loads`
and dominated our CPU per call.

Lines end at CR, LF or CRLF only (the SSE spec): not at the other characters `str.splitlines` splits
on, which a server that does not escape non-ASCII may send raw inside a JSON string (U+2028, U+0085).
An event without its closing blank line when the body ends is incomplete and not dispatched.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from orchestrator.providers.base import DeltaCallback
from orchestrator.providers.paced_read import PacedRead

DRAIN_TIMEOUT_S = 0.1  # the SDKs' bound for reading what follows the final event


class MalformedStream(ValueError):
    """Event data that is not the JSON object the API promises."""


class StreamError(Exception):
    """An error event inside a stream that had started (HTTP 200): `code` is safe to show, `detail` is not."""

    def __init__(self, detail: str, code: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code


_scan = json.JSONDecoder().scan_once  # the C scanner behind json.loads


def loads(data: str) -> dict[str, Any]:
    """One event's data as a JSON object. An event's data is one bare JSON value, so the scanner reads it
    straight (half of `json.loads`'s cost per event: its two whitespace regexes and two calls around it);
    anything else, whitespace around it or not JSON at all, goes through `json.loads`, which decides."""
    try:
        value, end = _scan(data, 0)
    except (StopIteration, json.JSONDecodeError):
        end = -1
    if end != len(data):
        try:
            value = json.loads(data)
        except json.JSONDecodeError:
            raise MalformedStream("not JSON") from None
    if not isinstance(value, dict):
        raise MalformedStream("not a JSON object")
    return value


def safe_code(value: object) -> str | None:
    """An error `code`/`type` worth quoting to users: a short identifier, never free text."""
    if isinstance(value, str) and 0 < len(value) <= 40 and value.replace("_", "").isalnum():
        return value
    return None


def stream_error(payload: object) -> StreamError:
    """The StreamError for an error event's payload: `{"error": {...}}` or the error object itself."""
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    code = None
    detail = ""
    if isinstance(error, dict):
        code = safe_code(error.get("code")) or safe_code(error.get("type"))
        message = error.get("message")
        detail = message if isinstance(message, str) else ""
    elif isinstance(error, str):
        detail = error
    return StreamError(detail or "an error event without a message", code)


class Decoder:
    """Incremental SSE decoding: `feed(bytes)` and, when the body ends, `end()` give the complete events."""

    __slots__ = ("_data", "_event", "_pending")

    def __init__(self) -> None:
        self._pending = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes, *, final: bool = False) -> list[tuple[str, str]]:
        """(event name or "", data) for every event this chunk completes; comments, ids and retries skipped."""
        buf = self._pending + chunk if self._pending else chunk
        held = b""
        if b"\r" in buf:
            if buf[-1] == 13 and not final:
                # A CR at the very end may be the first half of a CRLF split across reads: keep it for later.
                held, buf = b"\r", buf[:-1]
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        cut = buf.rfind(b"\n")
        if cut < 0:
            self._pending = buf + held
            return []
        self._pending = buf[cut + 1:] + held
        out: list[tuple[str, str]] = []
        data = self._data
        # LF never occurs inside a multi-byte UTF-8 sequence, so everything up to it decodes whole.
        for line in buf[:cut].decode("utf-8", "replace").split("\n"):
            if not line:
                if data:
                    joined = data[0] if len(data) == 1 else "\n".join(data)
                    if joined:  # the spec dispatches no event whose data is empty
                        out.append((self._event, joined))
                    data = self._data = []
                self._event = ""
                continue
            name, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                self._event = value
            # "" (a comment), "id", "retry" and unknown fields: nothing we use
        return out

    def end(self) -> list[tuple[str, str]]:
        """Events completed by a CR that ended the body; an event still missing its blank line is dropped."""
        return self.feed(b"", final=True) if self._pending.endswith(b"\r") else []


def body(response: Any, every_s: float = 0.0) -> AsyncIterator[bytes]:
    """The bytes of an SDK's streaming response (`with_streaming_response`) as they arrive.

    Over the SDKs' aiohttp transport (orchestrator/providers/http.py) they come straight from aiohttp's
    reader, whatever has arrived in one piece, with aiohttp's errors mapped to httpx2's as the transport
    maps them, and reads at least `every_s` apart (orchestrator/providers/paced_read.py). The SDK's
    `iter_bytes` passes each piece through five generators (the SDK's, httpx2's decoded and raw bytes and
    timer, the transport's), a noticeable share of a streamed call's CPU. A body with a content
    encoding, or another transport, is read through the SDK, unpaced."""
    http = response.http_response
    stream = getattr(http.stream, "_stream", http.stream)  # inside httpx2's BoundAsyncStream (its timer)
    raw = getattr(stream, "_aiohttp_response", None)
    transport = sys.modules.get(type(stream).__module__)
    errors = getattr(transport, "map_aiohttp_exceptions", None)
    if raw is None or errors is None or http.headers.get("content-encoding", "identity").lower() != "identity":
        return response.iter_bytes()
    return PacedRead(raw, errors, every_s)


async def batches(chunks: AsyncIterator[bytes]) -> AsyncIterator[list[tuple[str, str]]]:
    """The complete events (event name or "", data) of a byte stream, those that arrived together together:
    a loaded loop reads several at once (in-process engine: 1.04 a read at 1 debate, 1.37 at 100, 26.6 at
    1,000), and the text they carry is then handed on once (`ArrivedText`), not once an event."""
    decoder = Decoder()
    async for chunk in chunks:
        batch = decoder.feed(chunk)
        if batch:
            yield batch
    tail = decoder.end()
    if tail:
        yield tail


class ArrivedText:
    """A streamed call's text: `add` each piece as its event is read, `flush` after each batch of events to
    give the delta callback what the batch carried, in one piece."""

    __slots__ = ("_on_delta", "_sent", "parts")

    def __init__(self, on_delta: DeltaCallback | None) -> None:
        self.parts: list[str] = []
        self._sent = 0
        self._on_delta = on_delta

    def add(self, piece: str) -> None:
        self.parts.append(piece)

    async def flush(self) -> None:
        new = self.parts[self._sent:]
        if not new:
            return
        self._sent = len(self.parts)
        if self._on_delta is not None:
            await self._on_delta(new[0] if len(new) == 1 else "".join(new))


async def drain(chunks: AsyncIterator[bytes], timeout_s: float = DRAIN_TIMEOUT_S) -> None:
    """Read what follows the final event (normally just the end of the chunked body), so HTTP/1.1 keeps
    the connection for the next call; bounded, and a failure here cannot spoil a finished answer."""
    try:
        async with asyncio.timeout(timeout_s):
            async for _ in chunks:
                pass
    except (TimeoutError, httpx2.HTTPError, httpx2.StreamError):
        pass
