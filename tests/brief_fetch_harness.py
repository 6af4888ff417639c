"""What test_brief_fetch.py shares with other test modules, moved here so that no test module imports another:
`fetcher`."""

from __future__ import annotations

import socket
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from orchestrator.brief.addresses import AllowedHosts, parse_address
from orchestrator.brief.fetch import Fetcher, FetchPolicy


class NamesResolver(AbstractResolver):
    """A table of names to addresses: what a DNS answer would say, with no DNS asked."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names
        self.asked: list[str] = []

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
                      ) -> list[ResolveResult]:
        self.asked.append(host)
        if host not in self.names:
            raise OSError(socket.EAI_NONAME, "no such name")
        return [ResolveResult(hostname=host, host=a, port=port, flags=socket.AI_NUMERICHOST, proto=0,
                              family=socket.AF_INET6 if ":" in a else socket.AF_INET) for a in self.names[host]]

    async def close(self) -> None:
        return None


class RecordingConnector(aiohttp.TCPConnector):
    """Records every connection asked for; connects only to 127.0.0.1, refuses anything else."""

    def __init__(self, resolver: AbstractResolver, attempts: list[str]) -> None:
        super().__init__(resolver=resolver, use_dns_cache=False, force_close=True)
        self.pinned = resolver
        self.attempts = attempts

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:  # noqa: ASYNC109 (aiohttp's signature)
        addresses = [req.host] if parse_address(req.host) else [a["host"] for a in
                                                                 await self.pinned.resolve(req.host, req.port)]
        self.attempts.append(f"{req.host}->{','.join(addresses)}")
        if any(address != "127.0.0.1" for address in addresses):
            raise aiohttp.ClientConnectionError("the test refuses to connect past loopback")
        return await super().connect(req, traces, timeout)


def fetcher(allow: str = "", names: dict[str, list[str]] | None = None, **policy: Any
            ) -> tuple[Fetcher, list[str], NamesResolver]:
    attempts: list[str] = []
    resolver = NamesResolver(names or {})
    client = Fetcher(FetchPolicy(allowed=AllowedHosts.parse(allow), **policy), resolver=resolver,
                     connector=lambda pinned: RecordingConnector(pinned, attempts))
    return client, attempts, resolver
