"""What test_serve.py shares with other test modules, moved here so that no test module imports another:
`discord_verdict_posted`, `free_port`, `health_until`, `slack_verdict_posted`."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import aiohttp

from tests.fakes.discord_api import DiscordPeer
from tests.fakes.slack_api import SlackAPIPeer


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# at most 120 s: a `debate serve` pays seconds of CPU to import its SDKs, more while the other test
# workers (make test runs one per core) start theirs
STARTUP_POLLS = 1200


async def health_until(url: str, proc: asyncio.subprocess.Process, status: int) -> dict:
    """Poll /healthz until it answers `status`: the platform's state changes inside the subprocess."""
    async with aiohttp.ClientSession() as http:
        for _ in range(STARTUP_POLLS):
            if proc.returncode is not None:
                raise AssertionError("debate serve exited early")
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(url) as response:
                    if response.status == status:
                        return await response.json()
            await asyncio.sleep(0.1)
    raise AssertionError(f"/healthz never answered {status}")


def slack_verdict_posted(peer: SlackAPIPeer) -> bool:
    return any(m.thread_ts and m.blocks and any(b["type"] == "actions" for b in m.blocks)
               for m in peer.messages.values())


def discord_verdict_posted(peer: DiscordPeer) -> bool:
    return any(t["id"] and any(m["components"] for m in peer.channel_messages(t["id"])) for t in peer.threads())
