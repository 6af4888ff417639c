"""A Slack Web API peer on loopback: answers like Slack, enforces its limits on demand, records calls.

    async with SlackAPIPeer() as peer:
        client = AsyncWebClient(token="xoxb-test", base_url=peer.base_url)

It speaks the methods debate-bot uses (form, JSON and query bodies alike), serves response_url
posts at `/response/<key>`, a Socket Mode websocket at `/socket` (returned by apps.connections.open),
and can answer 429 with Retry-After, either on demand (`rate_limit`) or by enforcing Slack's own
limits (`enforce`: chat.postMessage per channel, chat.update per workspace, chat.startStream and
chat.stopStream (Tier 2) and chat.appendStream (Tier 4)), scaled for fast tests. Messages take
`markdown` blocks (12,000 characters across a message; none in views or ephemeral messages); native
streams need a thread and, outside a DM, the recipient's user and team, close after `stream_ttl`
(`message_not_in_streaming_state`), and can be refused outright (`refuse_streams`).
Channels and users are what tests declare (`declare_channel`, `declare_user`): conversations.info
answers an undeclared channel as a public one and users.info an undeclared user as a plain member with
no names. Modals: views.open takes a trigger id once and records the modal (`opened`), checked against
Slack's limits; `view_submission_payload` builds what Slack sends when one is submitted. People's messages
and files (`say`, `add_file`): conversations.replies lists a thread with each message's user and files,
files.info describes a file with the channels it was shared in, and its download URL serves it only to a
bot token, as Slack's does.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

TEXT_LIMIT = 4000
SECTION_LIMIT = 3000
HEADER_LIMIT = 150
BUTTON_LIMIT = 75
BLOCKS_LIMIT = 50
MARKDOWN_LIMIT = 12_000  # across every markdown block of one message
VIEW_TITLE_LIMIT = 24  # a modal's title, submit and close labels
MODAL_BLOCKS_LIMIT = 100
ChannelKind = Literal["public", "private", "im", "mpim", "unreachable"]
UserRole = Literal["plain", "admin", "owner"]


def sign(secret: str, body: str, timestamp: int | None = None) -> dict[str, str]:
    """Headers Slack sends with a request: `v0=` HMAC-SHA256 of `v0:{timestamp}:{body}`."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    status: int = 200
    error: str | None = None
    result: dict[str, Any] = field(default_factory=dict)  # the answer's body (chat.startStream's `ts`)

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None

    @property
    def markdown(self) -> str:
        """The text of the markdown blocks this call sent, joined (a stream's markdown_text too)."""
        blocks = self.params.get("blocks") or []
        sent = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "markdown"]
        return "\n".join(sent) or str(self.params.get("markdown_text") or "")


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]] | None
    thread_ts: str | None
    edits: int = 0
    streaming_since: float | None = None  # chat.startStream made it and no stop came yet
    appends: int = 0

    @property
    def markdown(self) -> str:
        """The text of the message's markdown blocks, joined: what Slack renders as standard Markdown."""
        return "\n".join(b["text"] for b in self.blocks or [] if b.get("type") == "markdown")
    metadata: dict[str, Any] | None = None  # chat.postMessage's `metadata` (event_type, event_payload)
    user: str | None = None  # who wrote it, for a message a test says a person posted (`say`)
    files: tuple[str, ...] = ()  # the ids of files attached to it (`add_file`)


@dataclass
class File:
    """A file a person uploaded (`add_file`): files.info describes it, and its `url_private_download`
    serves its bytes only to a request that carries a bot token."""

    id: str
    name: str
    mimetype: str
    content: bytes
    channels: tuple[str, ...]
    title: str = ""


@dataclass
class Limits:
    """Slack's limits, scalable: `post_interval` seconds between posts per channel, at most
    `updates` chat.update calls per `window` seconds per workspace (a token bucket)."""

    post_interval: float | None = None
    updates: int | None = None
    window: float = 60.0
    retry_after: int = 0
    stream_calls: int | None = None  # chat.startStream + chat.stopStream per window (Tier 2)
    stream_appends: int | None = None  # chat.appendStream per window (Tier 4)
    stream_ttl: float = 300.0  # Slack closes a stream after this many seconds


@dataclass
class _Bucket:
    capacity: int
    window: float
    tokens: float = 0.0
    at: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = float(self.capacity)

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.capacity / self.window)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


def _block_problem(blocks: list[dict[str, Any]], *, markdown: bool = True) -> str | None:
    """What Slack would refuse in `blocks`; `markdown`: whether the surface takes markdown blocks (messages
    apps post or update do; views and ephemeral messages do not)."""
    if len(blocks) > BLOCKS_LIMIT:
        return f"more than {BLOCKS_LIMIT} blocks"
    for block in blocks:
        kind = block.get("type")
        if kind == "markdown":
            if not markdown:
                return "markdown blocks are not supported here"
            if not isinstance(block.get("text"), str) or not block["text"]:
                return "a markdown block needs text"
            continue
        text = (block.get("text") or {}).get("text", "")
        if kind == "section" and len(text) > SECTION_LIMIT:
            return f"section text over {SECTION_LIMIT}"
        if kind == "header" and len(text) > HEADER_LIMIT:
            return f"header text over {HEADER_LIMIT}"
        for field_ in block.get("fields", []) or []:
            if len(field_.get("text", "")) > 2000:
                return "field text over 2000"
        for element in block.get("elements", []) or []:
            label = (element.get("text") or {}).get("text", "") if isinstance(element.get("text"), dict) else ""
            if element.get("type") == "button" and len(label) > BUTTON_LIMIT:
                return f"button text over {BUTTON_LIMIT}"
            if element.get("type") == "button" and len(element.get("value", "")) > 2000:
                return "button value over 2000"
    return None


def _view_problem(view: dict[str, Any]) -> str | None:
    if view.get("type") != "modal":
        return "a view opened from a trigger must be a modal"
    for key in ("title", "submit", "close"):
        label = (view.get(key) or {}).get("text", "")
        if key == "title" and not label:
            return "a modal needs a title"
        if len(label) > VIEW_TITLE_LIMIT:
            return f"{key} over {VIEW_TITLE_LIMIT} characters"
    if len(str(view.get("private_metadata", ""))) > 3000:
        return "private_metadata over 3000 characters"
    blocks = view.get("blocks") or []
    if len(blocks) > MODAL_BLOCKS_LIMIT:
        return f"more than {MODAL_BLOCKS_LIMIT} blocks"
    for block in blocks:
        if block.get("type") == "input":
            element = block.get("element") or {}
            if not block.get("block_id") or not element.get("action_id"):
                return "an input block needs a block_id and its element an action_id"
            if int(element.get("max_length", 3000)) > 3000:
                return "a plain-text input holds at most 3000 characters"
    return _block_problem([b for b in blocks if b.get("type") != "input"], markdown=False)


class SlackAPIPeer:
    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.calls: list[Call] = []
        self.messages: dict[tuple[str, str], Message] = {}
        self.views: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, ChannelKind] = {}
        self.users: dict[str, UserRole] = {}
        self.names: dict[str, tuple[str, str]] = {}  # user → (display_name, real_name)
        self.opened: list[dict[str, Any]] = []  # every modal views.open showed, with its "id"
        self.shared: dict[tuple[str, str], list[str]] = {}  # (channel, ts) → the links a link_shared event named
        self.unfurls: dict[tuple[str, str], dict[str, Any]] = {}  # (channel, ts) → chat.unfurl's `unfurls`
        self.files: dict[str, File] = {}
        self.downloads: list[tuple[str, str]] = []  # (file id, the Authorization header) of each download
        self._triggers: set[str] = set()
        self.socket_acks: list[dict[str, Any]] = []
        self._forced: dict[str, deque[int]] = {}
        self._lose: list[tuple[str, Callable[[dict[str, Any]], bool]]] = []  # answers to drop: method, match
        self.lost: list[Message] = []  # messages posted whose answer the peer dropped
        self._last_post: dict[str, float] = {}
        self._bucket: _Bucket | None = None
        self._stream_bucket: _Bucket | None = None
        self._append_bucket: _Bucket | None = None
        self.streams_refused: str | None = None  # an error every chat.startStream answers (`refuse_streams`)
        self._counter = 0
        self._changed = asyncio.Condition()
        self._sockets: list[web.WebSocketResponse] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle --------------------------------------------------------------------------
    async def __aenter__(self) -> SlackAPIPeer:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/response/{key}", self._response_url)
        app.router.add_get("/socket", self._socket)
        app.router.add_get("/files/{id}/{name}", self._download)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, key: str = "r1") -> str:
        return f"http://127.0.0.1:{self.port}/response/{key}"

    # -- test controls ----------------------------------------------------------------------
    def lose_answer(self, match: Callable[[dict[str, Any]], bool], method: str = "chat.postMessage") -> None:
        """The next `method` call whose params `match`: carried out (the message is posted), then the
        connection is dropped instead of answering, as when the bot dies or the network fails right then."""
        self._lose.append((method, match))

    def rate_limit(self, method: str, *, times: int = 1, retry_after: int = 0) -> None:
        """Answer the next `times` calls of `method` with 429 and `Retry-After: retry_after`."""
        self._forced.setdefault(method, deque()).extend([retry_after] * times)

    def say(self, channel: str, text: str, *, user: str = "U2", thread_ts: str | None = None,
            files: tuple[str, ...] = ()) -> Message:
        """A message a person posted (not the bot): what a shortcut is clicked on, or a thread's reply."""
        message = Message(channel=channel, ts=self._next_ts(), text=text, blocks=None, thread_ts=thread_ts,
                          user=user, files=files)
        self.messages[(channel, message.ts)] = message
        return message

    def add_file(self, file_id: str, name: str, mimetype: str, content: bytes, channels: tuple[str, ...],
                 title: str = "") -> File:
        self.files[file_id] = File(file_id, name, mimetype, content, channels, title or name)
        return self.files[file_id]

    def file_url(self, file_id: str) -> str:
        file = self.files[file_id]
        return f"http://127.0.0.1:{self.port}/files/{file.id}/{file.name}"

    async def _download(self, request: web.Request) -> web.Response:
        file = self.files.get(request.match_info["id"])
        auth = request.headers.get("Authorization", "")
        self.downloads.append((request.match_info["id"], auth))
        if file is None or not auth.startswith("Bearer xox"):
            return web.Response(status=302, headers={"Location": "/signin"})  # Slack's answer without a token
        return web.Response(body=file.content, headers={"Content-Type": file.mimetype})

    def _m_files_info(self, params: dict[str, Any]) -> dict[str, Any]:
        file = self.files.get(str(params.get("file")))
        if file is None:
            return {"ok": False, "error": "file_not_found"}
        url = self.file_url(file.id)
        public = [c for c in file.channels if self.channels.get(c, "public") == "public"]
        private = [c for c in file.channels if c not in public]
        return {"ok": True, "file": {"id": file.id, "name": file.name, "title": file.title, "mimetype": file.mimetype,
                                     "size": len(file.content), "url_private": url, "url_private_download": url,
                                     "permalink": url, "channels": public, "groups": private, "ims": []}}

    def declare_channel(self, channel: str, kind: ChannelKind) -> None:
        """What conversations.info says of `channel`; "unreachable" answers `channel_not_found`, as Slack
        does for a private channel the bot is not in."""
        self.channels[channel] = kind

    def declare_user(self, user: str, role: UserRole = "plain", *, display_name: str = "",
                     real_name: str = "") -> None:
        """What users.info says of `user`: its role, and the names in its profile (empty: not set)."""
        self.users[user] = role
        self.names[user] = (display_name, real_name)

    def enforce(self, limits: Limits) -> None:
        self.limits = limits
        self._bucket = self._stream_bucket = self._append_bucket = None

    def refuse_streams(self, error: str | None = "feature_not_enabled") -> None:
        """Answer every chat.startStream with `error` (None: accept them again)."""
        self.streams_refused = error

    def of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def thread(self, channel: str, root_ts: str) -> list[Message]:
        """The replies under `root_ts`, oldest first."""
        found = [m for m in self.messages.values() if m.channel == channel and m.thread_ts == root_ts]
        return sorted(found, key=lambda m: float(m.ts))

    def message(self, channel: str, ts: str) -> Message:
        return self.messages[(channel, ts)]

    async def wait_for(self, predicate: Callable[[SlackAPIPeer], object], within: float = 20.0) -> None:
        async def _wait() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: bool(predicate(self)))

        await asyncio.wait_for(_wait(), within)

    # -- socket mode ------------------------------------------------------------------------
    async def socket_send(self, envelope: dict[str, Any]) -> None:
        """Push an envelope (slash_commands, interactive, events_api) to every connected client."""
        await self.wait_for(lambda p: p._sockets)
        for ws in list(self._sockets):
            await ws.send_str(json.dumps(envelope))

    async def drop_sockets(self) -> None:
        for ws in list(self._sockets):
            await ws.close()

    @property
    def socket_connections(self) -> int:
        return len(self._sockets)

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._sockets.append(ws)
        await self._record(Call(method="socket.connect", params={}, at=time.monotonic()))
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1}))
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self.socket_acks.append(json.loads(msg.data))
                    await self._record(Call(method="socket.ack", params=json.loads(msg.data), at=time.monotonic()))
        finally:
            self._sockets.remove(ws)
            await self._notify()
        return ws

    # -- HTTP -------------------------------------------------------------------------------
    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _record(self, call: Call) -> None:
        self.calls.append(call)
        await self._notify()

    async def _response_url(self, request: web.Request) -> web.Response:
        params = await request.json()
        params["key"] = request.match_info["key"]
        await self._record(Call(method="response_url", params=params, at=time.monotonic()))
        return web.Response(text="ok")

    @staticmethod
    async def _params(request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.can_read_body:
            raw = await request.text()
            if request.content_type == "application/json":
                params.update(json.loads(raw or "{}"))
            else:
                params.update(dict(parse_qsl(raw)))
        for key in ("blocks", "view", "attachments"):
            if isinstance(params.get(key), str):
                params[key] = json.loads(params[key])
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            params.setdefault("token", auth.removeprefix("Bearer "))
        return params

    def _limited(self, method: str, params: dict[str, Any]) -> int | None:
        forced = self._forced.get(method)
        if forced:
            return forced.popleft()
        limits = self.limits
        if method == "chat.postMessage" and limits.post_interval:
            channel = str(params.get("channel"))
            now = time.monotonic()
            last = self._last_post.get(channel)
            if last is not None and now - last < limits.post_interval:
                return limits.retry_after
            self._last_post[channel] = now
        if method == "chat.update" and limits.updates:
            if self._bucket is None:
                self._bucket = _Bucket(limits.updates, limits.window)
            if not self._bucket.take():
                return limits.retry_after
        if method in ("chat.startStream", "chat.stopStream") and limits.stream_calls:
            if self._stream_bucket is None:
                self._stream_bucket = _Bucket(limits.stream_calls, limits.window)
            if not self._stream_bucket.take():
                return limits.retry_after
        if method == "chat.appendStream" and limits.stream_appends:
            if self._append_bucket is None:
                self._append_bucket = _Bucket(limits.stream_appends, limits.window)
            if not self._append_bucket.take():
                return limits.retry_after
        return None

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        call = Call(method=method, params=params, at=time.monotonic())
        retry_after = self._limited(method, params)
        if retry_after is not None:
            call.status, call.error = 429, "ratelimited"
            await self._record(call)
            return web.json_response(
                {"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": str(retry_after)}
            )
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        body = handler(params) if handler else {"ok": False, "error": "unknown_method"}
        call.error = None if body.get("ok") else body.get("error")
        call.result = body
        lose = next((entry for entry in self._lose if entry[0] == method and entry[1](params)), None)
        if lose is not None and body.get("ok"):
            self._lose.remove(lose)
            call.error = "answer lost"
            if "ts" in body:
                self.lost.append(self.messages[(str(body["channel"]), str(body["ts"]))])
            await self._record(call)
            assert request.transport is not None
            request.transport.abort()  # done, never answered
            raise ConnectionResetError("the peer dropped the answer")
        await self._record(call)
        return web.json_response(body)

    def _content_problem(self, params: dict[str, Any], *, markdown: bool = True) -> str | None:
        if len(str(params.get("text") or "")) > TEXT_LIMIT:
            return "msg_too_long"
        blocks = params.get("blocks")
        if blocks and _block_problem(blocks, markdown=markdown):
            return "invalid_blocks"
        if blocks and sum(len(b["text"]) for b in blocks if b.get("type") == "markdown") > MARKDOWN_LIMIT:
            return "msg_blocks_too_long"
        if not params.get("text") and not blocks:
            return "no_text"
        return None

    def _next_ts(self) -> str:
        self._counter += 1
        return f"{1_700_000_000 + self._counter}.{self._counter:06d}"

    # -- methods ----------------------------------------------------------------------------
    def _m_auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True, "url": "https://peer.example/", "team": "Peer", "user": "debatebot",
            "team_id": "T1", "user_id": "UBOT", "bot_id": "BBOT",
        }

    def _m_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        if problem := self._content_problem(params):
            return {"ok": False, "error": problem}
        channel = str(params["channel"])
        ts = self._next_ts()
        metadata = params.get("metadata")
        if isinstance(metadata, str):
            metadata = json.loads(metadata)
        message = Message(channel, ts, str(params.get("text") or ""), params.get("blocks"), params.get("thread_ts"),
                          metadata=metadata)
        self.messages[(channel, ts)] = message
        return {"ok": True, "channel": channel, "ts": ts, "message": {"text": message.text, "ts": ts}}

    def _m_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (str(params.get("channel")), str(params.get("ts")))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        streaming = self.messages[key].streaming_since
        if streaming is not None and time.monotonic() - streaming <= self.limits.stream_ttl:
            return {"ok": False, "error": "cant_update_message"}  # a stream is written through its own calls
        if problem := self._content_problem(params):
            return {"ok": False, "error": problem}
        message = self.messages[key]
        message.text = str(params.get("text") or "")
        if "blocks" in params:
            message.blocks = params["blocks"]
        message.edits += 1
        return {"ok": True, "channel": key[0], "ts": key[1], "text": message.text}

    def _m_chat_startStream(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.streams_refused:
            return {"ok": False, "error": self.streams_refused}
        channel, thread_ts = str(params.get("channel") or ""), params.get("thread_ts")
        if not channel or not thread_ts:
            return {"ok": False, "error": "invalid_arguments"}
        if not channel.startswith("D") and not (params.get("recipient_user_id") and params.get("recipient_team_id")):
            return {"ok": False, "error": "missing_recipient_team_id" if params.get("recipient_user_id")
                    else "missing_recipient_user_id"}
        text = str(params.get("markdown_text") or "")
        if len(text) > MARKDOWN_LIMIT:
            return {"ok": False, "error": "msg_too_long"}
        ts = self._next_ts()
        self.messages[(channel, ts)] = Message(channel, ts, "", [{"type": "markdown", "text": text}], str(thread_ts),
                                               streaming_since=time.monotonic())
        return {"ok": True, "channel": channel, "ts": ts}

    def _streaming(self, params: dict[str, Any]) -> Message | dict[str, Any]:
        message = self.messages.get((str(params.get("channel")), str(params.get("ts"))))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.streaming_since is None or time.monotonic() - message.streaming_since > self.limits.stream_ttl:
            message.streaming_since = None
            return {"ok": False, "error": "message_not_in_streaming_state"}
        return message

    def _m_chat_appendStream(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._streaming(params)
        if isinstance(message, dict):
            return message
        assert message.blocks is not None
        text = message.blocks[0]["text"] + str(params.get("markdown_text") or "")
        if len(text) > MARKDOWN_LIMIT:
            return {"ok": False, "error": "msg_too_long"}
        message.blocks[0]["text"] = text
        message.appends += 1
        return {"ok": True, "channel": message.channel, "ts": message.ts}

    def _m_chat_stopStream(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._streaming(params)
        if isinstance(message, dict):
            return message
        assert message.blocks is not None
        message.blocks[0]["text"] += str(params.get("markdown_text") or "")
        if params.get("blocks"):
            message.blocks += list(params["blocks"])
        message.streaming_since = None
        return {"ok": True, "channel": message.channel, "ts": message.ts}
    def _m_conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        """A thread, its root first, `limit` messages a page (`cursor`: the index to go on from)."""
        channel, root = str(params.get("channel")), str(params.get("ts"))
        if (channel, root) not in self.messages:
            return {"ok": False, "error": "thread_not_found"}
        thread = [self.messages[(channel, root)], *self.thread(channel, root)]
        start, limit = int(params.get("cursor") or 0), int(params.get("limit") or 100)
        metadata = str(params.get("include_all_metadata", "")).lower() in ("1", "true")
        page = [{"type": "message", "ts": m.ts, "text": m.text, "thread_ts": m.thread_ts or m.ts,
                 **({"metadata": m.metadata} if metadata and m.metadata else {}),
                 **({"user": m.user} if m.user else {}),
                 **({"files": [{"id": f, "name": self.files[f].name} for f in m.files]} if m.files else {})}
                for m in thread[start:start + limit]]
        more = start + limit < len(thread)
        return {"ok": True, "messages": page, "has_more": more,
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _m_chat_delete(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (str(params.get("channel")), str(params.get("ts")))
        if self.messages.pop(key, None) is None:
            return {"ok": False, "error": "message_not_found"}
        return {"ok": True, "channel": key[0], "ts": key[1]}

    def _m_chat_unfurl(self, params: dict[str, Any]) -> dict[str, Any]:
        """As Slack: `channel` + `ts` of a message whose link_shared event was sent (or `unfurl_id` +
        `source`), and `unfurls`, a JSON object keyed by the shared URLs; others are `cannot_unfurl_url`."""
        unfurls = params.get("unfurls")
        if isinstance(unfurls, str):
            unfurls = json.loads(unfurls)
        key = (str(params.get("channel") or ""), str(params.get("ts") or ""))
        if not isinstance(unfurls, dict) or not unfurls:
            return {"ok": False, "error": "invalid_unfurls"}
        if key not in self.shared:
            return {"ok": False, "error": "cannot_find_message"}
        if any(url not in self.shared[key] for url in unfurls):
            return {"ok": False, "error": "cannot_unfurl_url"}
        for shown in unfurls.values():
            if not isinstance(shown, dict) or _block_problem(shown.get("blocks") or [], markdown=False):
                return {"ok": False, "error": "invalid_unfurls"}
        self.unfurls[key] = unfurls
        return {"ok": True}

    async def share_links(self, events_url: str, urls: list[str], *, channel: str = "C1", user: str = "U1",
                          team: str = "T1", secret: str | None = None) -> int:
        """A user posts `urls` in `channel`: Slack sends the app a signed `link_shared` event (JSON, as
        the Events API does) naming the message and its links; returns the app's HTTP status."""
        import aiohttp

        ts = self._next_ts()
        self.messages[(channel, ts)] = Message(channel=channel, ts=ts, text=" ".join(urls), blocks=None,
                                               thread_ts=None)
        self.shared[(channel, ts)] = list(urls)
        body = json.dumps({
            "token": "legacy", "team_id": team, "api_app_id": "A1", "type": "event_callback",
            "event_id": f"Ev{ts.replace('.', '')}", "event_time": int(time.time()), "authed_users": [user],
            "event": {"type": "link_shared", "channel": channel, "is_bot_user_member": True, "user": user,
                      "message_ts": ts, "unfurl_id": f"{channel}.{ts}.unfurl", "event_ts": ts,
                      "source": "conversations_history",
                      "links": [{"domain": url.split("/")[2], "url": url} for url in urls]},
        })
        headers = {"Content-Type": "application/json", **sign(secret or SIGNING_SECRET, body)}
        async with aiohttp.ClientSession() as http, http.post(events_url, data=body.encode(), headers=headers) as r:
            return r.status

    def _m_chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        if problem := self._content_problem(params, markdown=False):
            return {"ok": False, "error": problem}
        return {"ok": True, "message_ts": self._next_ts()}

    def _m_chat_getPermalink(self, params: dict[str, Any]) -> dict[str, Any]:
        key = (str(params.get("channel")), str(params.get("message_ts")))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        link = f"https://peer.slack/archives/{key[0]}/p{key[1].replace('.', '')}"
        return {"ok": True, "channel": key[0], "permalink": link}

    def _m_views_publish(self, params: dict[str, Any]) -> dict[str, Any]:
        view = params.get("view") or {}
        if problem := _block_problem(view.get("blocks", []), markdown=False):
            return {"ok": False, "error": "invalid_arguments", "detail": problem}
        self.views[str(params.get("user_id"))] = view
        return {"ok": True, "view": view}

    def _m_conversations_info(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel") or "")
        kind = self.channels.get(channel, "public")
        if not channel or kind == "unreachable":
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": {
            "id": channel, "is_channel": kind == "public", "is_group": kind == "private", "is_im": kind == "im",
            "is_mpim": kind == "mpim", "is_private": kind in ("private", "mpim", "im"),
        }}

    def _m_users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user = str(params.get("user") or "")
        if not user:
            return {"ok": False, "error": "user_not_found"}
        role = self.users.get(user, "plain")
        display_name, real_name = self.names.get(user, ("", ""))
        return {"ok": True, "user": {"id": user, "name": user.lower(), "is_admin": role in ("admin", "owner"),
                                     "is_owner": role == "owner", "is_primary_owner": False,
                                     "real_name": real_name,
                                     "profile": {"display_name": display_name, "real_name": real_name}}}

    def _m_views_open(self, params: dict[str, Any]) -> dict[str, Any]:
        trigger, view = str(params.get("trigger_id") or ""), params.get("view") or {}
        if not trigger:
            return {"ok": False, "error": "invalid_trigger_id"}
        if trigger in self._triggers:
            return {"ok": False, "error": "exchanged_trigger_id"}
        problem = _view_problem(view)
        if problem:
            return {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": [problem]}}
        self._triggers.add(trigger)
        self._counter += 1
        opened = {**view, "id": f"V{self._counter:08d}", "trigger_id": trigger}
        self.opened.append(opened)
        return {"ok": True, "view": opened}

    def _m_apps_connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}

    def _m_oauth_v2_access(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("code") != "good-code":
            return {"ok": False, "error": "invalid_code"}
        return {
            "ok": True, "app_id": "A1", "access_token": "xoxb-installed", "token_type": "bot",
            "scope": "commands,chat:write", "bot_user_id": "UBOT",
            "team": {"id": "T9", "name": "Installed"}, "enterprise": None, "is_enterprise_install": False,
            "authed_user": {"id": "U9"},
        }


# -------------------------------------------------------------------------------------------------
# Payloads Slack sends to the bot, signed like Slack signs them.

SIGNING_SECRET = "test-signing-secret-0123456789"


def slash_body(text: str, *, user: str = "U1", channel: str = "C1", team: str = "T1", trigger: str | None = None,
               response_url: str = "http://127.0.0.1:9/response/none") -> str:
    """The form body of a `/debate` slash command request."""
    from urllib.parse import urlencode

    fields = {
        "token": "legacy-verification-token", "team_id": team, "team_domain": "peer", "channel_id": channel,
        "channel_name": "general", "user_id": user, "user_name": "ada", "command": "/debate", "text": text,
        "api_app_id": "A1", "response_url": response_url,
        "trigger_id": trigger or f"trigger-{time.monotonic_ns()}",
    }
    return urlencode(fields)


def interactive_body(payload: dict[str, Any]) -> str:
    """Block actions and shortcuts arrive as a form field `payload` holding JSON."""
    from urllib.parse import urlencode

    return urlencode({"payload": json.dumps(payload)})


def action_payload(message: Message, action_id: str, value: str, *, user: str = "U1", team: str = "T1",
                   response_url: str = "http://127.0.0.1:9/response/none") -> dict[str, Any]:
    return {
        "type": "block_actions", "team": {"id": team, "domain": "peer"}, "user": {"id": user, "team_id": team},
        "api_app_id": "A1", "token": "legacy", "trigger_id": f"trigger-{time.monotonic_ns()}",
        "channel": {"id": message.channel, "name": "general"}, "response_url": response_url,
        "container": {"type": "message", "message_ts": message.ts, "channel_id": message.channel},
        "message": {"type": "message", "ts": message.ts, "text": message.text, "blocks": message.blocks or [],
                    **({"thread_ts": message.thread_ts} if message.thread_ts else {})},
        "actions": [{"type": "button", "action_id": action_id, "block_id": "b", "value": value,
                     "action_ts": str(time.time())}],
    }


def shortcut_payload(message: Message, callback_id: str, *, user: str = "U1", team: str = "T1",
                     response_url: str = "http://127.0.0.1:9/response/none") -> dict[str, Any]:
    return {
        "type": "message_action", "callback_id": callback_id, "team": {"id": team, "domain": "peer"},
        "user": {"id": user, "team_id": team}, "channel": {"id": message.channel, "name": "general"},
        "api_app_id": "A1", "token": "legacy", "trigger_id": f"trigger-{time.monotonic_ns()}",
        "response_url": response_url, "message_ts": message.ts,
        "message": {"type": "message", "ts": message.ts, "text": message.text, "blocks": message.blocks or [],
                    **({"thread_ts": message.thread_ts} if message.thread_ts else {}),
                    **({"user": message.user} if message.user else {}),
                    **({"files": [{"id": f} for f in message.files]} if message.files else {})},
    }


def view_submission_payload(view: dict[str, Any], values: dict[str, str | None], *, user: str = "U1",
                            team: str = "T1") -> dict[str, Any]:
    """What Slack sends when `view` (as views.open recorded it) is submitted; `values` by input block id."""
    state: dict[str, Any] = {}
    for block in view.get("blocks") or []:
        if block.get("type") == "input" and block["block_id"] in values:
            action = block["element"]["action_id"]
            state[block["block_id"]] = {action: {"type": block["element"]["type"], "value": values[block["block_id"]]}}
    return {
        "type": "view_submission", "team": {"id": team, "domain": "peer"}, "user": {"id": user, "team_id": team},
        "api_app_id": "A1", "token": "legacy", "trigger_id": f"trigger-{time.monotonic_ns()}",
        "view": {"id": view.get("id", "V1"), "team_id": team, "type": "modal", "callback_id": view.get("callback_id"),
                 "private_metadata": view.get("private_metadata", ""), "blocks": view.get("blocks") or [],
                 "title": view.get("title"), "state": {"values": state}, "hash": "h1", "app_id": "A1",
                 "bot_id": "BBOT"},
        "response_urls": [],
    }


# -------------------------------------------------------------------------------------------------
# The bot under test: Core + bolt app + our aiohttp server on a random port, talking to the peer.


def slack_settings(db: str, peer: SlackAPIPeer, llm_openai: str, llm_anthropic: str, **extra: Any) -> Any:
    from bots.settings import load_settings

    values: dict[str, Any] = {
        "DEBATE_DB": db, "DEBATE_MAX_RETRIES": 0,
        "OPENAI_API_KEY": "sk-test-openai-key", "OPENAI_BASE_URL": llm_openai,
        "ANTHROPIC_API_KEY": "sk-ant-test-key-123456", "ANTHROPIC_BASE_URL": llm_anthropic,
        "SLACK_BOT_TOKEN": "xoxb-test-token", "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_BASE_URL": peer.base_url,
    }
    values.update(extra)
    return load_settings(**values)


class SlackBot:
    """`async with SlackBot(settings) as bot: await bot.command("topic")` — signed HTTP into our server."""

    def __init__(self, settings: Any, limits: Any = None, *, role: str = "serve", grace_s: float = 1.0,
                 name: str | None = None, lease: tuple[float, float] | None = None) -> None:
        """`role`: the Core's ("serve": front and worker in this process, as `debate serve` runs;
        "front": the front only, its debates run by a worker elsewhere). `grace_s`: the worker's
        graceful stop at exit (what is still running resumes at the next start). `name`: the process's
        (`debate serve --name`): two fronts sharing a log need two. `lease`: the tailer's (lease_s,
        sweep_s) instead of seconds-long defaults."""
        self.name = name
        self.lease = lease
        self.settings = settings
        self.limits = limits
        self.role = role
        self.grace_s = grace_s
        self.port = 0
        self.ack_seconds: list[float] = []
        self.resumed: list[str] = []  # the debates whose threads the front resumed at start

    async def __aenter__(self) -> SlackBot:
        from bots.slack.app import build_app
        from bots.slack.serve import serve_http
        from orchestrator.app import Core

        self.core = await Core.open(self.settings, self.role, name=self.name)  # type: ignore[arg-type]
        await self.core.warm_up()  # as run_slack does
        self.app, self.runtime = build_app(self.core, limits=self.limits)
        if self.runtime.tailer is not None:  # as run_slack does before taking requests
            if self.lease is not None:
                self.runtime.tailer.lease_s, self.runtime.tailer.sweep_s = self.lease
            self.resumed = await self.runtime.tailer.start()
        self._stop = asyncio.Event()
        started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._server = asyncio.create_task(serve_http(self.app, "127.0.0.1", 0, self._stop, started.set_result,
                                                      signing_secret=self.settings.slack_signing_secret))
        self.port = await started
        import aiohttp

        self.http = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.close()
        self._stop.set()
        await self._server
        await self.core.stop_workers(self.grace_s)
        await self.runtime.shutdown()
        await self.core.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def running(self) -> list[str]:
        """The debates whose threads this front is rendering (started here, or resumed at start)."""
        return [] if self.runtime.tailer is None else self.runtime.tailer.following

    async def post(self, body: str, *, headers: dict[str, str] | None = None, secret: str = SIGNING_SECRET,
                   timestamp: int | None = None) -> tuple[int, str]:
        """POST a signed body to /slack/events; records how long the ack took."""
        sent = {"Content-Type": "application/x-www-form-urlencoded", **sign(secret, body, timestamp), **(headers or {})}
        started = time.monotonic()
        async with self.http.post(f"{self.url}/slack/events", data=body.encode(), headers=sent) as response:
            text = await response.text()
        self.ack_seconds.append(time.monotonic() - started)
        return response.status, text

    async def command(self, text: str, peer: SlackAPIPeer, **kwargs: Any) -> tuple[int, str]:
        kwargs.setdefault("response_url", peer.response_url())
        return await self.post(slash_body(text, **kwargs))

    async def interact(self, payload: dict[str, Any]) -> tuple[int, str]:
        return await self.post(interactive_body(payload))

    async def settle(self) -> None:
        """Until every listener task has finished, debate threads included (their sinks are tasks too)."""
        await self.runtime.idle()
