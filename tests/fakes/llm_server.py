"""A loopback OpenAI- and Anthropic-compatible HTTP server that the real SDKs talk to in tests.

    async with FakeLLMServer() as srv:
        srv.add_rule(match="summarize", reply=Reply(text="Short."))
        srv.add_rule(reply=Reply(status=429), times=2)         # fail twice, then fall through
        client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="sk-test")
        ...
        assert srv.requests[-1].model == "gpt-5"

Speaks `POST /v1/chat/completions` (SSE streaming and plain), `GET /v1/models`, and
`POST /v1/messages` (Anthropic events and plain), each with its structured-output mode (OpenAI
`response_format` json_schema strict, Anthropic a forced tool: tests/fakes/structured.py).
Every request is recorded in `srv.requests`
with perf_counter timestamps, so tests can prove calls overlapped. Rules are checked in the order
they were added; the first live one whose `match` fits answers, else `srv.default` does.

`match` is None (always), a string (a substring of the last user message, or the model name
exactly), or a callable taking the RequestRecord. A Reply's `text` may be a callable taking the
request JSON. Usage counts are deterministic: ceil(characters / 4) of the prompt and of the reply.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes import structured

JSON_HEADERS = {"Content-Type": "application/json"}
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
_PIECES = re.compile(r"\s*\S+\s*|\s+")


def count_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


_json_string = json.encoder.encode_basestring_ascii  # `_dump` of a str, without making an encoder each time


def _framed(frame: Callable[[str], bytes]) -> Callable[[str], bytes]:
    """`frame(piece)` for every piece, its JSON around the piece made once (the benches' peer writes ~600,000
    pieces for 1,000 debates, on the cores the product is measured on)."""
    before, _, after = frame("\x00").decode().partition(_dump("\x00"))
    return lambda piece: f"{before}{_json_string(piece)}{after}".encode()


@dataclass(slots=True)
class Reply:
    """How the server answers one request.

    text            the reply, or a callable(request_json) -> str; None: the server's default text
    latency_s       wait before the first byte
    gate            an asyncio.Event to wait for before the first byte (a test holds a call open)
    tokens_per_s    streaming pace (a token is a word here); 0 sends everything at once
    status          HTTP status; non-200 sends that API's realistic error JSON
    retry_after     seconds for Retry-After/retry-after-ms (429 defaults to 0.01)
    cut_after_chars close the connection after this many characters of text, without finishing
    hang            never answer (until the client goes away or the server stops)
    garbage         send SSE data that is not JSON
    finish_reason   OpenAI finish_reason (Anthropic gets the matching stop_reason)
    """

    text: str | Callable[[dict[str, Any]], str] | None = None
    latency_s: float = 0.0
    gate: asyncio.Event | None = None
    tokens_per_s: float = 0.0
    status: int = 200
    retry_after: float | None = None
    cut_after_chars: int | None = None
    hang: bool = False
    garbage: bool = False
    finish_reason: str = "stop"


@dataclass(slots=True)
class Rule:
    reply: Reply
    match: str | Callable[[RequestRecord], bool] | None = None
    times: int | None = None  # None: forever
    used: int = 0

    def applies(self, record: RequestRecord) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if self.match is None:
            return True
        if isinstance(self.match, str):
            return self.match in record.last_user or self.match == record.model
        return bool(self.match(record))


@dataclass(slots=True)
class RequestRecord:
    api: str  # "openai" | "anthropic"
    model: str
    messages: list[dict[str, str]]  # system included, as {"role": "system", ...} first for anthropic
    stream: bool
    headers: dict[str, str]  # Authorization / x-api-key / anthropic-version, when sent
    body: dict[str, Any]
    started_at: float
    finished_at: float | None = None
    status: int | None = None
    cancelled: bool = False  # the client went away before the response was complete
    streamed_chars: int = 0  # characters of reply text written to the client so far (a stream's pieces)
    done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def last_user(self) -> str:
        for message in reversed(self.messages):
            if message["role"] == "user":
                return message["content"]
        return ""

    @property
    def prompt_text(self) -> str:
        return "".join(m["content"] for m in self.messages)

    @property
    def api_key(self) -> str | None:
        auth = self.headers.get("Authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:]
        return self.headers.get("x-api-key")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _default_text(record: RequestRecord) -> str:
    ask = " ".join(record.last_user.split())[:80]
    return f"As {record.model or 'the model'}, my answer to “{ask}” is this, with evidence."


class FakeLLMServer:
    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, api_key: str | None = None) -> None:
        self.host = host
        self._port = port
        self.api_key = api_key  # when set, requests with any other key get 401
        # False: a host with no structured-output mode, which answers a json_schema response_format with a 400
        self.structured_output = True
        self.rules: list[Rule] = []
        self.default = Reply()
        self.default_text: Callable[[RequestRecord], str] = _default_text
        self.requests: list[RequestRecord] = []
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    # ---- lifecycle ----

    async def start(self) -> FakeLLMServer:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._openai_chat)
        app.router.add_get("/v1/models", self._openai_models)
        app.router.add_post("/v1/messages", self._anthropic_messages)
        # handler_cancellation: a client that disconnects cancels its handler, so tests can see it.
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._port, backlog=4096)
        await site.start()
        self._port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeLLMServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self._port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    # ---- scripting ----

    def add_rule(
        self,
        reply: Reply,
        match: str | Callable[[RequestRecord], bool] | None = None,
        *,
        times: int | None = None,
    ) -> Rule:
        rule = Rule(reply=reply, match=match, times=times)
        self.rules.append(rule)
        return rule

    def reset(self) -> None:
        self.rules.clear()
        self.requests.clear()
        self.default = Reply()

    async def wait_for_requests(self, n: int = 1) -> RequestRecord:
        """Wait until at least `n` requests have arrived; return the n-th."""
        if len(self.requests) < n:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append((n, future))
            await future
        return self.requests[n - 1]

    def _pick(self, record: RequestRecord) -> Reply:
        for rule in self.rules:
            if rule.applies(record):
                rule.used += 1
                return rule.reply
        return self.default

    def _text(self, reply: Reply, record: RequestRecord) -> str:
        if reply.text is None:
            return self.default_text(record)
        if callable(reply.text):
            return reply.text(record.body)
        return reply.text

    def _record(self, request: web.Request, api: str, body: dict[str, Any]) -> RequestRecord:
        messages = [
            {"role": str(m.get("role", "")), "content": _content_text(m.get("content"))}
            for m in body.get("messages") or []
            if isinstance(m, dict)
        ]
        if api == "anthropic" and body.get("system"):
            messages.insert(0, {"role": "system", "content": _content_text(body["system"])})
        wanted = ("Authorization", "x-api-key", "anthropic-version")
        headers = {k: request.headers[k] for k in wanted if k in request.headers}
        record = RequestRecord(
            api=api,
            model=str(body.get("model", "")),
            messages=messages,
            stream=bool(body.get("stream")),
            headers=headers,
            body=body,
            started_at=time.perf_counter(),
        )
        self.requests.append(record)
        if self._waiters:
            count = len(self.requests)
            still = []
            for n, future in self._waiters:
                if n <= count:
                    if not future.done():
                        future.set_result(None)
                else:
                    still.append((n, future))
            self._waiters = still
        return record

    # ---- handlers ----

    async def _serve(self, request: web.Request, api: str) -> web.StreamResponse:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return web.Response(status=400, body=b'{"error":{"message":"invalid JSON body"}}', headers=JSON_HEADERS)
        record = self._record(request, api, body if isinstance(body, dict) else {})
        try:
            reply = self._pick(record)
            if self.api_key is not None and record.api_key != self.api_key:
                reply = Reply(status=401)
            if reply.latency_s > 0:
                await asyncio.sleep(reply.latency_s)
            if reply.gate is not None:
                await reply.gate.wait()
            if reply.hang:
                await self._closing.wait()
                raise ConnectionResetError("server closing")
            refused = self._schema_refused(record)
            if refused is not None:
                resp = await self._send_json(request, 400, refused, {})
            elif reply.status != 200:
                resp = await self._error(request, record, reply)
            elif api == "openai":
                resp = await self._openai_answer(request, record, reply)
            else:
                resp = await self._anthropic_answer(request, record, reply)
            record.status = resp.status
            return resp
        except (asyncio.CancelledError, ConnectionResetError):
            record.cancelled = True
            raise
        finally:
            record.finished_at = time.perf_counter()
            record.done.set()

    def _schema_refused(self, record: RequestRecord) -> dict[str, Any] | None:
        """The API's 400 body for a structured-output request it would not take, else None."""
        if not self.structured_output and record.api == "openai" and isinstance(record.body.get("response_format"),
                                                                                  dict):
            return {"error": {"message": "response_format of type 'json_schema' is not supported by this server",
                              "type": "invalid_request_error", "param": "response_format", "code": None}}
        try:
            if record.api == "openai":
                structured.openai_schema(record.body)
            else:
                structured.anthropic_tool(record.body)
        except structured.SchemaRefused as exc:
            if record.api == "openai":
                return {"error": {"message": str(exc), "type": "invalid_request_error", "param": "response_format",
                                  "code": None}}
            return {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}}
        return None

    async def _openai_chat(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "openai")

    async def _anthropic_messages(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "anthropic")

    async def _openai_models(self, request: web.Request) -> web.Response:
        names = sorted({"fake-model", *(r.model for r in self.requests if r.api == "openai" and r.model)})
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "fake"} for n in names]
        return web.Response(body=_dump({"object": "list", "data": data}).encode(), headers=JSON_HEADERS)

    async def _send_json(
        self, request: web.Request, status: int, payload: Any, headers: dict[str, str]
    ) -> web.Response:
        resp = web.Response(status=status, body=_dump(payload).encode(), headers={**JSON_HEADERS, **headers})
        await resp.prepare(request)
        await resp.write_eof()
        return resp

    async def _error(self, request: web.Request, record: RequestRecord, reply: Reply) -> web.Response:
        status = reply.status
        headers: dict[str, str] = {}
        retry_after = reply.retry_after if reply.retry_after is not None else (0.01 if status == 429 else None)
        if retry_after is not None:
            headers["retry-after-ms"] = str(int(retry_after * 1000))
            headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
        key = record.api_key or ""
        if record.api == "openai":
            # Real OpenAI quotes (part of) the key back in a 401; this peer quotes all of it, so a
            # test can prove the provider never passes the body text on.
            kinds = {
                401: ("invalid_request_error", "invalid_api_key", f"Incorrect API key provided: {key}."),
                403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
                404: ("invalid_request_error", "model_not_found", f"The model `{record.model}` does not exist."),
                429: ("requests", "rate_limit_exceeded", f"Rate limit reached for {record.model} (key {key})."),
            }
            kind, code, message = kinds.get(
                status, ("server_error", None, f"The server had an error processing your request (key {key}).")
            )
            payload: dict[str, Any] = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        else:
            kinds_a = {
                400: "invalid_request_error",
                401: "authentication_error",
                403: "permission_error",
                404: "not_found_error",
                429: "rate_limit_error",
                529: "overloaded_error",
            }
            kind = kinds_a.get(status, "api_error")
            payload = {
                "type": "error",
                "error": {"type": kind, "message": f"{kind.replace('_', ' ')} (x-api-key {key})"},
                "request_id": f"req_{next(self._ids):06d}",
            }
        return await self._send_json(request, status, payload, headers)

    async def _stream_pieces(
        self, request: web.Request, resp: web.StreamResponse, reply: Reply, text: str, frame: Callable[[str], bytes],
        record: RequestRecord | None = None,
    ) -> bool:
        """Write the text as framed pieces at the reply's pace (counted in `record.streamed_chars`); False
        when cut off mid-way."""
        limit = reply.cut_after_chars
        pieces = _PIECES.findall(text)
        if limit is not None:
            kept, total = [], 0
            for piece in pieces:
                if total + len(piece) >= limit:
                    kept.append(piece[: limit - total])
                    break
                kept.append(piece)
                total += len(piece)
            pieces = [p for p in kept if p]
        if reply.tokens_per_s <= 0:
            if pieces:
                await resp.write(b"".join(frame(p) for p in pieces))
                if record is not None:
                    record.streamed_chars += sum(len(p) for p in pieces)
        else:
            start = time.perf_counter()
            for i, piece in enumerate(pieces):
                await resp.write(frame(piece))
                if record is not None:
                    record.streamed_chars += len(piece)
                ahead = start + (i + 1) / reply.tokens_per_s - time.perf_counter()
                if ahead > 0.002:
                    await asyncio.sleep(ahead)
        if limit is not None:
            # Drop the connection without the closing chunk: the client sees a truncated body.
            await asyncio.sleep(0)
            if request.transport is not None:
                request.transport.close()
            return False
        return True

    async def _openai_answer(self, request: web.Request, record: RequestRecord, reply: Reply) -> web.StreamResponse:
        text = self._text(reply, record)
        refusal: str | None = None
        schema = structured.openai_schema(record.body)
        if schema is not None:
            shaped = structured.shaped(text, schema)
            refusal, text = (text, "") if shaped is None else (None, shaped)
        ident = f"chatcmpl-{next(self._ids):08d}"
        created = int(time.time())
        prompt_tokens, completion_tokens = count_tokens(record.prompt_text), count_tokens(text)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if not record.stream:
            payload = {
                "id": ident,
                "object": "chat.completion",
                "created": created,
                "model": record.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None if refusal else text, "refusal": refusal},
                        "logprobs": None,
                        "finish_reason": reply.finish_reason,
                    }
                ],
                "usage": usage,
            }
            return await self._send_json(request, 200, payload, {})

        head = (
            f'data: {{"id":"{ident}","object":"chat.completion.chunk",'
            f'"created":{created},"model":{_dump(record.model)},'
        )

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return f'{head}"choices":[{_dump(choice)}]}}\n\n'.encode()

        resp = web.StreamResponse(status=200, headers=SSE_HEADERS)
        await resp.prepare(request)
        if reply.garbage:
            first = chunk({"role": "assistant", "content": ""})
            await resp.write(first + b"data: {this is not json\n\ndata: [DONE]\n\n")
            await resp.write_eof()
            return resp
        await resp.write(chunk({"role": "assistant", "content": ""}))
        field = "content" if refusal is None else "refusal"
        if not await self._stream_pieces(request, resp, reply, refusal or text,
                                         _framed(lambda piece: chunk({field: piece})), record):
            return resp
        tail = chunk({}, reply.finish_reason)
        if (record.body.get("stream_options") or {}).get("include_usage"):
            tail += f'{head}"choices":[],"usage":{_dump(usage)}}}\n\n'.encode()
        await resp.write(tail + b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _anthropic_answer(
        self, request: web.Request, record: RequestRecord, reply: Reply
    ) -> web.StreamResponse:
        text = self._text(reply, record)
        ident = f"msg_{next(self._ids):08d}"
        tool = structured.anthropic_tool(record.body)
        block: dict[str, Any] = {"type": "text", "text": ""}
        if tool is not None:  # a forced tool: its input is the answer, in the input schema's shape
            meant = structured.meant_object(text) or {}
            text = json.dumps(structured.conform(meant, tool[1]), separators=(",", ":"))
            block = {"type": "tool_use", "id": f"toolu_{next(self._ids):08d}", "name": tool[0], "input": {}}
        input_tokens, output_tokens = count_tokens(record.prompt_text), count_tokens(text)
        stop_reason = {"stop": "end_turn", "length": "max_tokens"}.get(reply.finish_reason, reply.finish_reason)
        if tool is not None and reply.finish_reason == "stop":
            stop_reason = "tool_use"
        if not record.stream:
            payload = {
                "id": ident,
                "type": "message",
                "role": "assistant",
                "model": record.model,
                "content": [{**block, "input": json.loads(text)} if tool else {"type": "text", "text": text}],
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }
            return await self._send_json(request, 200, payload, {})

        def event(name: str, data: dict[str, Any]) -> bytes:
            return f"event: {name}\ndata: {_dump(data)}\n\n".encode()

        @_framed
        def delta(piece: str) -> bytes:
            part = ({"type": "input_json_delta", "partial_json": piece} if tool is not None
                    else {"type": "text_delta", "text": piece})
            return event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": part})

        message = {
            "id": ident,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": record.model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        }
        resp = web.StreamResponse(status=200, headers=SSE_HEADERS)
        await resp.prepare(request)
        await resp.write(
            event("message_start", {"type": "message_start", "message": message})
            + event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            )
            + event("ping", {"type": "ping"})
        )
        if reply.garbage:
            await resp.write(b"event: content_block_delta\ndata: {this is not json\n\n")
            await resp.write_eof()
            return resp
        if not await self._stream_pieces(request, resp, reply, text, delta, record):
            return resp
        await resp.write(
            event("content_block_stop", {"type": "content_block_stop", "index": 0})
            + event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens},
                },
            )
            + event("message_stop", {"type": "message_stop"})
        )
        await resp.write_eof()
        return resp
