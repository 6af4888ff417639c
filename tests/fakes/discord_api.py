"""A loopback Discord peer: REST under /api/v10 and a gateway websocket, driving the real discord.py.

Point discord.py at it with `api_base_url` / `gateway_url` (DISCORD_API_BASE_URL, DISCORD_GATEWAY_URL).
It records every REST call, keeps the messages and threads it was asked to create, answers 429 with
`Via` on demand (`fail_next`) or when a channel goes over `rate_limit` writes per window, and pushes
INTERACTION_CREATE payloads built by `slash_command`, `button_click`, `message_command` and
`modal_submit` (the answer to a form the bot opened: an interaction callback of type 9, kept as the
interaction record's `modal`).

A message created with a `nonce` and `enforce_nonce: true` is remembered for `nonce_window_s`: the same
nonce from the same author within it gives back that message and creates none, as Discord does.
`lose_answers` takes the next matching calls (the message is created) and closes the connection instead
of answering: the answer a kill -9 or a dropped connection loses.

Tenancy: `add_channel` declares more text channels (one hidden from @everyone by a permission
overwrite, or one in another guild), `everyone_permissions` is the @everyone role sent in GUILD_CREATE
(the default has every bit, Administrator included, so every channel reads as public), an interaction
can carry the member's resolved `permissions`, come from another channel (`channel_id`), or from a DM
(`dm=True`: no guild, no member). Each interaction's record keeps every answer the bot sent to it.
`names` gives a member a server nickname (their display name there). `on_call` lets a test look at the
world (the log, say) at the moment a given REST call arrives, before the bot gets its answer.

Sharding: a client that IDENTIFYs with `shard` [id, count] gets READY with that `shard`, a GUILD_CREATE
for each guild of that shard only ((guild_id >> 22) % count; `add_guild` declares more guilds than
GUILD_ID), and the events of those guilds (interactions included) on that connection only; DMs go to
shard 0. A client without `shard` gets every guild, as Discord does for one connection.

People's messages (`say`, with attachments served as the CDN serves them), their threads (`open_thread`),
a channel's history (GET …/messages) and a slash command's attachment option (`attachment_option`) are
there for the brief's tests.

JSON is served with Content-Type exactly `application/json`: discord.py parses nothing else.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

JSON = dict[str, Any]
TOKEN = "test-bot-token"
APP_ID = "710000000000000001"
BOT_ID = "710000000000000002"
GUILD_ID = "720000000000000001"
CHANNEL_ID = "730000000000000001"
EVERYONE_PERMISSIONS = str((1 << 41) - 1)
VIEW_CHANNEL = 1 << 10
MANAGE_MESSAGES = 1 << 13
# what @everyone has on a typical server: view, send, embed, history, app commands, threads; no moderation
MEMBER_PERMISSIONS = str(VIEW_CHANNEL | 1 << 6 | 1 << 11 | 1 << 14 | 1 << 16 | 1 << 31 | 1 << 38)


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    auth: str | None
    body: Any
    at: float
    status: int = 200

    @property
    def is_write(self) -> bool:
        return self.method in ("POST", "PATCH") and "/messages" in self.path


@dataclass
class _Failure:
    method: str
    pattern: re.Pattern[str]
    count: int
    retry_after: float
    via: bool


@dataclass
class _Interaction:
    payload: JSON
    dispatched_at: float
    channel_id: str
    original: str | None = None
    callback_at: float | None = None
    answers: list[JSON] = field(default_factory=list)  # every callback's data and webhook body, in order
    modal: JSON | None = None  # the form the bot answered with (callback type 9)

    @property
    def ephemeral(self) -> list[JSON]:
        """The answers only the user sees (a deferral's "thinking…" not included)."""
        return [a for a in self.answers if (a.get("flags") or 0) & 64 and not (a.get("flags") or 0) & 128]


def _iso(ts: float | None = None) -> str:
    return datetime.fromtimestamp(ts or time.time(), UTC).isoformat()


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        body=json.dumps(data).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
    )


@dataclass
class DiscordPeer:
    """`async with DiscordPeer() as peer:` serves on 127.0.0.1, port chosen by the OS."""

    rate_limit: tuple[int, float] | None = None  # (writes, per seconds) per channel, like Discord's 5/5s
    heartbeat_ms: int = 30_000
    calls: list[Call] = field(default_factory=list)
    messages: dict[str, JSON] = field(default_factory=dict)
    channels: dict[str, JSON] = field(default_factory=dict)
    commands: dict[str, list[JSON]] = field(default_factory=dict)
    interactions: dict[str, _Interaction] = field(default_factory=dict)
    identifies: int = 0
    everyone_permissions: str = EVERYONE_PERMISSIONS
    names: dict[str, str] = field(default_factory=dict)  # user id → server nickname
    guilds: dict[str, str] = field(default_factory=lambda: {GUILD_ID: "Debate Club"})  # the bot's guilds: id → name
    shards: list[tuple[int, int] | None] = field(default_factory=list)  # each IDENTIFY's `shard`, in order
    on_call: Callable[[Call], Awaitable[None]] | None = None  # awaited as each REST call arrives, before its answer
    files: dict[str, bytes] = field(default_factory=dict)  # attachment id → its bytes, served at /attachments/
    nonce_window_s: float = 300.0  # Discord checks an enforced nonce "in the past few minutes"

    def __post_init__(self) -> None:
        self._ids = itertools.count(900_000_000_000_000_000)
        self._failures: list[_Failure] = []
        self._lost: list[_Failure] = []  # calls whose answer is lost (the connection closed), done all the same
        self._nonces: dict[tuple[str, str], tuple[str, float]] = {}  # (author, nonce) → (message id, when)
        self._sockets: list[web.WebSocketResponse] = []
        self._shard_of: dict[int, tuple[int, int] | None] = {}  # id(socket) → its shard [id, count]
        self._seq = 0
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.bot_user: JSON = {
            "id": BOT_ID, "username": "debate-bot", "discriminator": "0", "global_name": None,
            "avatar": None, "bot": True, "flags": 0, "verified": True, "mfa_enabled": False,
        }
        self.channels[CHANNEL_ID] = {
            "id": CHANNEL_ID, "type": 0, "guild_id": GUILD_ID, "name": "general", "position": 0,
            "permission_overwrites": [], "nsfw": False, "topic": None, "last_message_id": None,
            "rate_limit_per_user": 0, "parent_id": None, "flags": 0,
        }

    # ---------------------------------------------------------------- lifecycle
    async def __aenter__(self) -> DiscordPeer:
        app = web.Application()
        app.router.add_get("/gateway/", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        app.router.add_get("/attachments/{id}/{name}", self._attachment)
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
    def api_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway/"

    # ---------------------------------------------------------------- test controls
    def add_channel(self, channel_id: str, name: str, *, hidden: bool = False, guild_id: str = GUILD_ID) -> JSON:
        """A text channel; `hidden` denies View Channel to @everyone (a private channel). Channels of
        other guilds are not in GUILD_CREATE (the bot is not in that guild) but accept posts."""
        overwrites = [{"id": guild_id, "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)}] if hidden else []
        self.channels[channel_id] = {
            "id": channel_id, "type": 0, "guild_id": guild_id, "name": name, "position": len(self.channels),
            "permission_overwrites": overwrites, "nsfw": False, "topic": None, "last_message_id": None,
            "rate_limit_per_user": 0, "parent_id": None, "flags": 0,
        }
        return self.channels[channel_id]

    def add_guild(self, guild_id: str, name: str, channel_id: str) -> JSON:
        """Another guild the bot is in, with one text channel (returned)."""
        self.guilds[guild_id] = name
        return self.add_channel(channel_id, "general", guild_id=guild_id)

    def fail_next(self, method: str, path_regex: str, *, count: int = 1, retry_after: float = 0.05,
                  via: bool = True) -> None:
        """Answer the next `count` matching calls with 429 (`Via` set unless via=False)."""
        self._failures.append(_Failure(method, re.compile(path_regex), count, retry_after, via))

    def lose_answers(self, method: str, path_regex: str, *, count: int = 1) -> None:
        """Carry out the next `count` matching calls, then close the connection without answering them."""
        self._lost.append(_Failure(method, re.compile(path_regex), count, 0.0, False))

    def answer_all(self) -> None:
        """Answer every call again (the losses `lose_answers` set that are left are dropped)."""
        self._lost.clear()

    def _answer_lost(self, call: Call) -> bool:
        for lost in self._lost:
            if lost.count > 0 and lost.method == call.method and lost.pattern.search(call.path):
                lost.count -= 1
                return True
        return False

    async def wait_for(self, predicate: Callable[[], Any], within: float = 15.0) -> Any:
        """Wait until `predicate()` is truthy, re-checked after every call the peer serves."""
        async with asyncio.timeout(within), self._changed:
            return await self._changed.wait_for(predicate)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def say(self, channel_id: str, content: str, *, user_id: str = "740000000000000003",
            attachments: tuple[tuple[str, str, bytes], ...] = ()) -> JSON:
        """A message a person posted in `channel_id`, with `attachments` of (filename, content type, bytes)
        served from the peer as Discord's CDN serves them."""
        files = []
        for filename, content_type, data in attachments:
            file_id = str(next(self._ids))
            self.files[file_id] = data
            files.append({"id": file_id, "filename": filename, "size": len(data), "content_type": content_type,
                          "url": f"http://127.0.0.1:{self.port}/attachments/{file_id}/{filename}",
                          "proxy_url": f"http://127.0.0.1:{self.port}/attachments/{file_id}/{filename}"})
        return self._new_message(channel_id, {"content": content}, author=self._user(user_id), attachments=files)

    def attachment_option(self, name: str, filename: str, content_type: str, data: bytes) -> tuple[JSON, JSON]:
        """A slash command's attachment option (type 11) and its `resolved` entry."""
        file_id = str(next(self._ids))
        self.files[file_id] = data
        url = f"http://127.0.0.1:{self.port}/attachments/{file_id}/{filename}"
        return ({"name": name, "type": 11, "value": file_id},
                {"attachments": {file_id: {"id": file_id, "filename": filename, "size": len(data),
                                           "content_type": content_type, "url": url, "proxy_url": url}}})

    async def open_thread(self, channel_id: str, message_id: str, name: str) -> JSON:
        """A person opened a public thread on a message: Discord creates it and tells the bot."""
        await self._thread(channel_id, {"name": name}, from_message=message_id)
        return self.channels[message_id]

    async def _attachment(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["id"])
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, headers={"Content-Type": "application/octet-stream"})

    def channel_messages(self, channel_id: str) -> list[JSON]:
        return [m for m in self.messages.values() if m["channel_id"] == channel_id]

    def threads(self) -> list[JSON]:
        return [c for c in self.channels.values() if c["type"] in (11, 12)]

    def writes(self) -> list[Call]:
        return [c for c in self.calls if c.is_write and c.status < 300]

    # ---------------------------------------------------------------- interactions
    def _user(self, user_id: str) -> JSON:
        name = f"user{user_id[-3:]}"
        return {"id": user_id, "username": name, "discriminator": "0", "global_name": name, "avatar": None}

    def _member(self, user_id: str, permissions: str) -> JSON:
        return {
            "user": self._user(user_id), "roles": [], "joined_at": _iso(), "deaf": False, "mute": False,
            "flags": 0, "permissions": permissions, "nick": self.names.get(user_id), "avatar": None,
        }

    def _interaction(self, kind: int, data: JSON, channel_id: str, user_id: str, *, permissions: str | None = None,
                     dm: bool = False, **extra: Any) -> JSON:
        """`permissions`: the member's, as Discord resolves them in the channel (default: every bit)."""
        interaction_id = str(next(self._ids))
        if dm:
            place: JSON = {"channel": {"id": channel_id, "type": 1, "recipients": [self._user(user_id)],
                                       "last_message_id": None, "flags": 0},
                           "user": self._user(user_id), "context": 1, "authorizing_integration_owners": {"1": user_id}}
        else:
            guild_id = self.channels[channel_id]["guild_id"]
            place = {"guild_id": guild_id, "channel": self.channels[channel_id], "context": 0,
                     "member": self._member(user_id, permissions or EVERYONE_PERMISSIONS),
                     "authorizing_integration_owners": {"0": guild_id}, "guild_locale": "en-US"}
        return {
            "id": interaction_id, "application_id": APP_ID, "type": kind, "data": data, "channel_id": channel_id,
            "token": f"itoken-{interaction_id}", "version": 1, "app_permissions": EVERYONE_PERMISSIONS,
            "locale": "en-US", "entitlements": [], "attachment_size_limit": 8 * 1024 * 1024, **place, **extra,
        }

    def slash_command(self, name: str, options: dict[str, Any] | None = None, *, user_id: str = "740000000000000001",
                      channel_id: str = CHANNEL_ID, autocomplete: str | None = None, permissions: str | None = None,
                      dm: bool = False) -> JSON:
        """An application command (type 2), or with `autocomplete=option` an autocomplete request (type 4)."""
        kinds = {bool: 5, int: 4, float: 10, str: 3}
        opts = [{"name": k, "type": kinds[type(v)], "value": v} for k, v in (options or {}).items()]
        for opt in opts:
            if opt["name"] == autocomplete:
                opt["focused"] = True
        data = {"id": "750000000000000001", "name": name, "type": 1, "options": opts}
        return self._interaction(4 if autocomplete else 2, data, channel_id, user_id, permissions=permissions, dm=dm)

    def button_click(self, message_id: str, custom_id: str, *, user_id: str = "740000000000000001",
                     channel_id: str | None = None, permissions: str | None = None) -> JSON:
        """A click on a component of a stored message; `channel_id` says where the click claims to come from."""
        message = self.messages[message_id]
        data = {"custom_id": custom_id, "component_type": 2}
        return self._interaction(3, data, channel_id or message["channel_id"], user_id, permissions=permissions,
                                 message=message)

    def message_command(self, name: str, message_id: str, *, user_id: str = "740000000000000001",
                        channel_id: str | None = None, permissions: str | None = None) -> JSON:
        message = self.messages[message_id]
        data = {"id": "750000000000000002", "name": name, "type": 3, "target_id": message_id,
                "resolved": {"messages": {message_id: message}}}
        return self._interaction(2, data, channel_id or message["channel_id"], user_id, permissions=permissions)

    def modal_submit(self, opened_by: _Interaction, values: dict[str, str], *, user_id: str = "740000000000000001",
                     permissions: str | None = None) -> JSON:
        """The submission (type 5) of the form the bot answered `opened_by` with: the form's own components,
        each text input carrying `values[custom_id]` (empty when not given), as Discord sends them back."""
        modal = opened_by.modal
        if modal is None:
            raise AssertionError("the bot answered that interaction with no form")

        def filled(component: JSON) -> JSON:
            if component["type"] == 1:
                return {"type": 1, "components": [filled(c) for c in component["components"]]}
            if component["type"] == 18:
                return {"type": 18, "component": filled(component["component"])}
            return {"type": component["type"], "custom_id": component["custom_id"],
                    "value": values.get(component["custom_id"], "")}

        data = {"custom_id": modal["custom_id"], "components": [filled(c) for c in modal["components"]]}
        extra = {"message": opened_by.payload["message"]} if "message" in opened_by.payload else {}
        return self._interaction(5, data, opened_by.channel_id, user_id, permissions=permissions, **extra)

    async def dispatch_interaction(self, payload: JSON) -> _Interaction:
        record = _Interaction(payload, time.monotonic(), payload["channel_id"])
        self.interactions[payload["id"]] = record
        await self.dispatch("INTERACTION_CREATE", payload)
        return record

    async def dispatch(self, event: str, data: JSON, ws: web.WebSocketResponse | None = None) -> None:
        """Send a gateway event: on `ws`, else on the latest connection whose shard holds the event's guild."""
        ws = ws or self._socket_for(data.get("guild_id"))
        self._seq += 1
        await ws.send_str(json.dumps({"op": 0, "t": event, "s": self._seq, "d": data}))

    @staticmethod
    def shard_of(guild_id: str | None, count: int) -> int:
        return (int(guild_id) >> 22) % count if guild_id else 0

    def _holds(self, ws: web.WebSocketResponse, guild_id: str | None) -> bool:
        shard = self._shard_of.get(id(ws))
        return shard is None or self.shard_of(guild_id, shard[1]) == shard[0]

    def _socket_for(self, guild_id: str | None) -> web.WebSocketResponse:
        for ws in reversed(self._sockets):
            if self._holds(ws, guild_id):
                return ws
        raise RuntimeError("no gateway connection" + (f" for guild {guild_id}" if guild_id else ""))

    # ---------------------------------------------------------------- gateway
    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.append(ws)
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": self.heartbeat_ms}}))
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                if frame["op"] == 1:
                    await ws.send_str(json.dumps({"op": 11}))
                elif frame["op"] == 2:
                    shard = frame["d"].get("shard")
                    self._shard_of[id(ws)] = None if shard is None else (int(shard[0]), int(shard[1]))
                    await self._identify(ws)
                elif frame["op"] == 6:
                    self._seq += 1
                    await ws.send_str(json.dumps({"op": 0, "t": "RESUMED", "s": self._seq, "d": {}}))
        finally:
            self._sockets.remove(ws)
            self._shard_of.pop(id(ws), None)
        return ws

    async def _identify(self, ws: web.WebSocketResponse) -> None:
        self.identifies += 1
        shard = self._shard_of.get(id(ws))
        self.shards.append(shard)
        guilds = [g for g in self.guilds if self._holds(ws, g)]
        await self.dispatch("READY", {
            "v": 10, "user": self.bot_user, "guilds": [{"id": g, "unavailable": True} for g in guilds],
            "session_id": f"session-{self.identifies}", "resume_gateway_url": self.gateway_url,
            "application": {"id": APP_ID, "flags": 0}, "private_channels": [], "relationships": [],
            **({} if shard is None else {"shard": list(shard)}),
        }, ws)
        for guild_id in guilds:
            await self.dispatch("GUILD_CREATE", self._guild(guild_id), ws)
        await self._notify()

    def _guild(self, guild_id: str) -> JSON:
        return {
            "id": guild_id, "name": self.guilds[guild_id], "icon": None, "owner_id": "740000000000000009",
            "unavailable": False, "member_count": 2, "large": False, "features": [], "emojis": [],
            "stickers": [], "members": [], "presences": [], "voice_states": [], "stage_instances": [],
            "guild_scheduled_events": [], "soundboard_sounds": [], "premium_tier": 0,
            "roles": [{"id": guild_id, "name": "@everyone", "permissions": self.everyone_permissions,
                       "position": 0, "color": 0, "hoist": False, "managed": False, "mentionable": False,
                       "flags": 0}],
            "channels": [c for c in self.channels.values() if c["type"] == 0 and c["guild_id"] == guild_id],
            "threads": [t for t in self.threads() if t.get("guild_id") == guild_id],
            "joined_at": _iso(), "preferred_locale": "en-US",
        }

    # ---------------------------------------------------------------- REST
    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        body: Any = await request.json() if request.can_read_body else None
        call = Call(request.method, path, dict(request.query), request.headers.get("Authorization"), body,
                    time.monotonic())
        self.calls.append(call)
        if self.on_call is not None:
            await self.on_call(call)
        try:
            response = self._limited(call) or await self._route(call)
        except KeyError as exc:
            response = _json({"message": f"Unknown {exc}", "code": 10008}, 404)
        call.status = response.status
        await self._notify()
        if response.status < 300 and self._answer_lost(call) and request.transport is not None:
            request.transport.close()  # the call was carried out; its answer never reaches the client
        return response

    def _limited(self, call: Call) -> web.Response | None:
        for failure in self._failures:
            if failure.count > 0 and failure.method == call.method and failure.pattern.search(call.path):
                failure.count -= 1
                return self._429(failure.retry_after, failure.via)
        if self.rate_limit and call.is_write and call.path.startswith("/channels/"):
            channel = call.path.split("/")[2]
            limit, per = self.rate_limit
            recent = [c.at for c in self.calls[:-1] if c.is_write and c.status < 300
                      and c.path.split("/")[2:3] == [channel] and call.at - c.at < per]
            if len(recent) >= limit:
                return self._429(per - (call.at - recent[0]), True)
        return None

    @staticmethod
    def _429(retry_after: float, via: bool) -> web.Response:
        headers = {"Retry-After": f"{retry_after:.3f}", "X-RateLimit-Scope": "user"}
        if via:
            headers["Via"] = "1.1 google"
        return _json({"message": "You are being rate limited.", "retry_after": retry_after, "global": False},
                     429, headers)

    async def _route(self, call: Call) -> web.Response:
        m, p, body = call.method, call.path, call.body
        bot_only = not p.startswith(("/interactions/", "/webhooks/"))
        if bot_only and call.auth != f"Bot {TOKEN}":
            return _json({"message": "401: Unauthorized", "code": 0}, 401)
        if (m, p) == ("GET", "/users/@me"):
            return _json(self.bot_user)
        if (m, p) == ("GET", "/oauth2/applications/@me"):
            return _json(self._application())
        if match := re.fullmatch(r"/applications/\d+(?:/guilds/(\d+))?/commands", p):
            return self._commands(m, match.group(1) or "global", body)
        if match := re.fullmatch(r"/interactions/(\d+)/([^/]+)/callback", p):
            return self._callback(match.group(1), body, call)
        if match := re.fullmatch(r"/webhooks/\d+/([^/]+)(?:/messages/(@original|\d+))?", p):
            return self._webhook(m, match.group(1), match.group(2), body)
        if match := re.fullmatch(r"/channels/(\d+)", p):
            return _json(self.channels[match.group(1)])
        if re.fullmatch(r"/channels/\d+/typing", p):
            return web.Response(status=204)
        if match := re.fullmatch(r"/channels/(\d+)/messages/(\d+)/threads", p):
            return await self._thread(match.group(1), body, from_message=match.group(2))
        if match := re.fullmatch(r"/channels/(\d+)/threads", p):
            return await self._thread(match.group(1), body)
        if match := re.fullmatch(r"/channels/(\d+)/messages", p):
            self.channels[match.group(1)]  # a KeyError is a 404, as on Discord
            if m == "GET":  # history: newest first, as Discord answers, after/before an id
                found = [x for x in self.messages.values() if x["channel_id"] == match.group(1)
                         and int(x["id"]) > int(call.query.get("after", 0))
                         and int(x["id"]) < int(call.query.get("before", 1 << 63))]
                found.sort(key=lambda x: int(x["id"]), reverse=True)
                return _json(found[:int(call.query.get("limit", 50))])
            return _json(self._create_message(match.group(1), body, call.at))
        if match := re.fullmatch(r"/channels/(\d+)/messages/(\d+)", p):
            if m == "PATCH":
                return _json(self._edit(match.group(2), body))
            return _json(self.messages[match.group(2)])
        return _json({"message": f"fake peer: no route {m} {p}", "code": 0}, 404)

    def _application(self) -> JSON:
        return {
            "id": APP_ID, "name": "debate-bot", "description": "", "icon": None, "bot_public": True,
            "bot_require_code_grant": False, "verify_key": "0" * 64, "flags": 0, "team": None,
            "owner": {"id": "740000000000000009", "username": "owner", "discriminator": "0", "avatar": None},
            "summary": "", "rpc_origins": [], "interactions_endpoint_url": None,
        }

    def _commands(self, method: str, scope: str, body: Any) -> web.Response:
        if method == "PUT":
            self.commands[scope] = [
                {"description": "", "options": [], **c, "id": str(next(self._ids)), "application_id": APP_ID,
                 "version": "1", "guild_id": None if scope == "global" else scope,
                 "default_member_permissions": c.get("default_member_permissions")} for c in body
            ]
        return _json(self.commands.get(scope, []))

    def _create_message(self, channel_id: str, body: JSON, at: float) -> JSON:
        """A channel message, or, for an enforced nonce the author used within `nonce_window_s`, the message
        made then (Discord: "that message will be returned and no new message will be created")."""
        nonce = body.get("nonce")
        if nonce is None or not body.get("enforce_nonce"):
            return self._new_message(channel_id, body, **({} if nonce is None else {"nonce": nonce}))
        made = self._nonces.get((BOT_ID, str(nonce)))
        if made is not None and at - made[1] < self.nonce_window_s and made[0] in self.messages:
            return self.messages[made[0]]
        message = self._new_message(channel_id, body, nonce=nonce)
        self._nonces[(BOT_ID, str(nonce))] = (message["id"], at)
        return message

    def _new_message(self, channel_id: str, body: JSON, **extra: Any) -> JSON:
        message = {
            "id": str(next(self._ids)), "channel_id": channel_id, "type": 0,
            "guild_id": self.channels.get(channel_id, {}).get("guild_id", GUILD_ID),
            "author": self.bot_user, "content": body.get("content") or "", "embeds": body.get("embeds") or [],
            "components": body.get("components") or [], "flags": body.get("flags") or 0,
            "timestamp": _iso(), "edited_timestamp": None, "tts": False, "mention_everyone": False,
            "mentions": [], "mention_roles": [], "attachments": [], "pinned": False, **extra,
        }
        self.messages[message["id"]] = message
        return message

    def _edit(self, message_id: str, body: JSON) -> JSON:
        message = self.messages[message_id]
        for key in ("content", "embeds", "components", "flags"):
            if key in body:
                message[key] = body[key] if body[key] is not None else ([] if key != "content" else "")
        message["edited_timestamp"] = _iso()
        return message

    def _callback(self, interaction_id: str, body: JSON, call: Call) -> web.Response:
        record = self.interactions[interaction_id]
        if record.callback_at is not None:
            return _json({"message": "Interaction has already been acknowledged.", "code": 40060}, 400)
        record.callback_at = call.at
        kind, data = body["type"], body.get("data") or {}
        record.answers.append({**data, **({"flags": (data.get("flags") or 0) | 128} if kind == 5 else {})})
        if kind == 9:
            record.modal = data
        message: JSON | None = None
        if kind in (4, 5):
            loading = {"flags": (data.get("flags") or 0) | 128} if kind == 5 else {}
            message = self._new_message(record.channel_id, {**data, **loading},
                                        interaction_metadata={
                                            "id": interaction_id, "type": record.payload["type"],
                                            "user": record.payload.get("member", record.payload)["user"],
                                            "authorizing_integration_owners": {
                                                "0": record.payload.get("guild_id", GUILD_ID)},
                                        })
            record.original = message["id"]
        elif kind == 7:
            message = self._edit(record.payload["message"]["id"], data)
        if call.query.get("with_response") not in ("true", "1"):
            return web.Response(status=204)
        flags = (message or {}).get("flags", 0)
        return _json({
            "interaction": {
                "id": interaction_id, "type": record.payload["type"],
                "response_message_id": message["id"] if message else None,
                "response_message_loading": kind == 5, "response_message_ephemeral": bool(flags & 64),
            },
            "resource": {"type": kind, **({"message": message} if message else {})},
        })

    def _webhook(self, method: str, token: str, message_ref: str | None, body: Any) -> web.Response:
        record = next(r for r in self.interactions.values() if r.payload["token"] == token)
        if method in ("POST", "PATCH") and isinstance(body, dict):
            record.answers.append(body)
        if message_ref is None:
            return _json(self._new_message(record.channel_id, body, webhook_id=APP_ID))
        message_id = record.original if message_ref == "@original" else message_ref
        if message_id is None:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        if method == "PATCH":
            return _json(self._edit(message_id, body))
        return _json(self.messages[message_id])

    async def _thread(self, parent_id: str, body: JSON, from_message: str | None = None) -> web.Response:
        parent = self.channels[parent_id]
        thread = {
            "id": from_message or str(next(self._ids)), "guild_id": parent["guild_id"], "parent_id": parent_id,
            "owner_id": BOT_ID, "name": body["name"], "type": 11 if from_message else body.get("type", 12),
            "last_message_id": None, "message_count": 0, "member_count": 1, "rate_limit_per_user": 0,
            "flags": 0, "total_message_sent": 0,
            "thread_metadata": {"archived": False, "auto_archive_duration": body.get("auto_archive_duration", 1440),
                                "archive_timestamp": _iso(), "locked": False},
        }
        if from_message is not None:
            self.messages[from_message]["thread"] = thread
        self.channels[thread["id"]] = thread
        if parent["type"] != 0:
            return _json({"message": "Cannot create a thread here", "code": 50024}, 400)
        if any(self._holds(ws, thread["guild_id"]) for ws in self._sockets):
            await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return _json(thread, 201)
