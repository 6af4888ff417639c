"""Fetching a URL a user typed: the one client every fetch in the product goes through.

It is built as the attack surface it is. Only `http` and `https`, no credentials in the URL, ports 80
and 443 unless the operator allows another; the host is resolved once and every address it resolves to
is checked (orchestrator/brief/addresses.py) before a socket opens, and the connection is made to those
checked addresses only: the connector's resolver is pinned to them, so there is no second lookup a DNS
answer could change in between. Each redirect (at most 5) is checked the same way. The response must be
text/html, text/plain, text/markdown or application/pdf, at most 5 MB, and the whole fetch at most 10 s.
No cookies, no proxy or netrc credentials from the environment, an honest User-Agent.

`DEBATE_FETCH=off` refuses every URL; `DEBATE_FETCH_ALLOW_HOSTS` names hosts (or host:port) allowed even
when private: an intranet wiki, or the loopback server of a test. Every refusal is a `FetchRefused` whose
message is one line naming the URL and the reason.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from orchestrator.brief.addresses import AllowedHosts, parse_address, why_forbidden

MAX_BYTES = 5 * 1024 * 1024
TIMEOUT_S = 10.0
MAX_REDIRECTS = 5
CONTENT_TYPES = ("text/html", "text/plain", "text/markdown", "application/pdf")
REDIRECTS = (301, 302, 303, 307, 308)
_SHOWN_URL_CHARS = 100


class FetchError(Exception):
    """A URL that gave no text: the message is one line a user can read (the URL, then why)."""


class FetchRefused(FetchError):
    """A URL the policy does not allow, refused before any request was sent to where it pointed."""


def _user_agent() -> str:
    try:
        release = version("debate-bot")
    except PackageNotFoundError:
        release = "dev"
    return f"debate-bot/{release} (reads a link a user gave a debate; one request, no cookies)"


USER_AGENT = _user_agent()


@dataclass(frozen=True)
class FetchPolicy:
    """What a fetch may do: from the settings (`from_settings`), or lowered by a test."""

    enabled: bool = True
    allowed: AllowedHosts = field(default_factory=AllowedHosts)
    max_bytes: int = MAX_BYTES
    timeout_s: float = TIMEOUT_S
    max_redirects: int = MAX_REDIRECTS

    @classmethod
    def from_settings(cls, settings: object) -> FetchPolicy:
        """DEBATE_FETCH and DEBATE_FETCH_ALLOW_HOSTS of `settings` (orchestrator.config.Settings)."""
        return cls(enabled=getattr(settings, "debate_fetch", "on") == "on",
                   allowed=AllowedHosts.parse(getattr(settings, "debate_fetch_allow_hosts", "")))


@dataclass(frozen=True)
class Fetched:
    """A fetched page or file: where it ended up (after redirects), its media type and its bytes."""

    url: str
    content_type: str
    charset: str | None
    body: bytes
    redirects: tuple[str, ...] = ()


def shown_url(url: str | URL) -> str:
    """`url` as a message may show it: no query, fragment or credentials, at most 100 characters."""
    try:
        parsed = URL(str(url))
        text = str(parsed.with_user(None).with_query(None).with_fragment(None)) if parsed.absolute else str(url)
    except (ValueError, TypeError):
        text = str(url)
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN_URL_CHARS else text[: _SHOWN_URL_CHARS - 1] + "…"


class PinnedResolver(AbstractResolver):
    """The connector's resolver: the addresses already checked for one host, and nothing else."""

    def __init__(self, host: str, addresses: list[ResolveResult]) -> None:
        self.host = host
        self.addresses = addresses

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        if host != self.host:
            raise OSError(f"{host} was not checked")
        wanted = [a for a in self.addresses if family in (socket.AF_UNSPEC, a["family"])]
        return [{**a, "port": port or a["port"]} for a in wanted]  # type: ignore[typeddict-item]

    async def close(self) -> None:
        return None


ConnectorFactory = Callable[[AbstractResolver], aiohttp.BaseConnector]


def pinned_connector(resolver: AbstractResolver) -> aiohttp.BaseConnector:
    """The connector a fetch uses: its one resolver, no DNS cache, no connection kept."""
    return aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False, force_close=True)


class Fetcher:
    """Fetches URLs under one policy. `resolver` looks names up (aiohttp's default: the system's);
    `connector` makes the connector for one checked host (tests record what it would connect to)."""

    def __init__(self, policy: FetchPolicy, *, resolver: AbstractResolver | None = None,
                 connector: ConnectorFactory = pinned_connector) -> None:
        self.policy = policy
        self.resolver = resolver
        self.connector = connector

    async def fetch(self, url: str) -> Fetched:
        """The body at `url`, after at most `max_redirects` checked redirects, or FetchError / FetchRefused."""
        if not self.policy.enabled:
            raise FetchRefused(f"{shown_url(url)}: fetching links is off here (DEBATE_FETCH=off)")
        try:
            async with asyncio.timeout(self.policy.timeout_s):
                return await self._follow(url)
        except TimeoutError:
            raise FetchError(f"{shown_url(url)}: took longer than {self.policy.timeout_s:g} s") from None

    async def _follow(self, url: str) -> Fetched:
        current = self._checked_url(url)
        seen: list[str] = []
        while True:
            try:
                addresses = await self._checked_addresses(current)
            except FetchRefused as exc:
                if not seen:
                    raise
                raise FetchRefused(f"{shown_url(url)}: redirected to {exc}") from None
            answer = await self._request(current, addresses)
            if isinstance(answer, Fetched):
                return Fetched(answer.url, answer.content_type, answer.charset, answer.body, tuple(seen))
            seen.append(str(current))
            if len(seen) > self.policy.max_redirects:
                raise FetchRefused(f"{shown_url(url)}: more than {self.policy.max_redirects} redirects")
            try:
                current = self._checked_url(str(current.join(URL(answer))))
            except FetchRefused as exc:
                raise FetchRefused(f"{shown_url(url)}: redirected to {exc}") from None

    def _checked_url(self, text: str) -> URL:
        """`text` as a URL this policy allows to be looked up, or FetchRefused."""
        try:
            url = URL(text.strip())
        except (ValueError, TypeError):
            raise FetchRefused(f"{shown_url(text)}: not a URL") from None
        if url.scheme not in ("http", "https"):
            raise FetchRefused(f"{shown_url(text)}: only http and https links are read, not {url.scheme or 'this'}")
        if not url.host:
            raise FetchRefused(f"{shown_url(text)}: the link has no host")
        if url.user is not None or url.password is not None:
            raise FetchRefused(f"{shown_url(text)}: a link with a user name or password is not read")
        port = url.port or 0
        if not self.policy.allowed.allows_port(url.host, port):
            raise FetchRefused(f"{shown_url(text)}: port {port} is not allowed (80 and 443 are, and hosts "
                               "named with a port in DEBATE_FETCH_ALLOW_HOSTS)")
        return url

    async def _checked_addresses(self, url: str | URL) -> list[ResolveResult]:
        """Every address `url`'s host resolves to, each checked; FetchRefused if any is not public and
        the host is not allowed. An address literal is checked as it is, without a lookup."""
        url = URL(str(url))
        host, port = url.raw_host or "", url.port or 0
        allowed = self.policy.allowed.allows_host(host, port)
        literal = parse_address(host)
        if literal is not None:
            family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
            found: list[ResolveResult] = [ResolveResult(hostname=host, host=str(literal), port=port, family=family,
                                                        proto=0, flags=socket.AI_NUMERICHOST)]
        else:
            found = await self._resolve(url, host, port)
        if not found:
            raise FetchError(f"{shown_url(url)}: {host} has no address")
        if not allowed:
            for address in found:
                parsed = parse_address(address["host"])
                reason = "not an address" if parsed is None else why_forbidden(parsed)
                if reason:
                    named = "" if literal is not None else f" ({host} resolves to {address['host']})"
                    raise FetchRefused(f"{shown_url(url)}: {reason}{named}; only public addresses are read")
        return found

    async def _resolve(self, url: URL, host: str, port: int) -> list[ResolveResult]:
        resolver = self.resolver or aiohttp.DefaultResolver()
        try:
            return await resolver.resolve(host, port, family=socket.AF_UNSPEC)
        except OSError as exc:
            raise FetchError(f"{shown_url(url)}: {host} could not be looked up ({exc.strerror or exc})") from None
        finally:
            if self.resolver is None:
                await resolver.close()

    async def _request(self, url: URL, addresses: list[ResolveResult]) -> Fetched | str:
        """One request to `url`, connected only to `addresses`: the page, or the redirect's Location."""
        connector = self.connector(PinnedResolver(url.raw_host or "", addresses))
        headers = {"User-Agent": USER_AGENT, "Accept": ", ".join(CONTENT_TYPES) + ";q=0.9, */*;q=0.1"}
        async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                         headers=headers, trust_env=False) as session:
            try:
                async with session.get(url, allow_redirects=False) as response:
                    if response.status in REDIRECTS:
                        location = response.headers.get("Location", "")
                        if not location:
                            raise FetchError(f"{shown_url(url)}: a redirect with nowhere to go")
                        return location
                    if response.status >= 400:
                        raise FetchError(f"{shown_url(url)}: the server answered {response.status}")
                    media = (response.content_type or "").lower()
                    if media not in CONTENT_TYPES:
                        raise FetchRefused(f"{shown_url(url)}: {media or 'no content type'} is not read "
                                           f"(only {', '.join(CONTENT_TYPES)})")
                    body = await self._body(url, response)
                    return Fetched(str(response.url), media, response.charset, body)
            except aiohttp.ClientError as exc:
                raise FetchError(f"{shown_url(url)}: could not be read ({type(exc).__name__})") from None

    async def _body(self, url: URL, response: aiohttp.ClientResponse) -> bytes:
        """The body, stopped as soon as it passes the size cap (a declared length past it: not read)."""
        cap = self.policy.max_bytes
        too_big = f"{shown_url(url)}: larger than the {cap / 1024 / 1024:g} MB a link may be"
        if response.content_length is not None and response.content_length > cap:
            raise FetchRefused(too_big)
        body = bytearray()
        async for chunk in response.content.iter_chunked(64 * 1024):
            body += chunk
            if len(body) > cap:
                raise FetchRefused(too_big)
        return bytes(body)


async def fetch_url(url: str, policy: FetchPolicy) -> Fetched:
    """The body at `url` under `policy` (the usual resolver and connector)."""
    return await Fetcher(policy).fetch(url)
