"""Slack requests POSTed all at once from a process of its own, each timed to its answer there: the ack as a
client on another host sees it. In the bench's own process the client shared its event loop with the Slack Web
API peer taking every thread update of the streaming debates, and that loop's stalls (300–600 ms under load)
were counted in the front's ack.

Two clients (the job's "client"):
- "raw" (the default): each request's socket connected and its bytes sent in turn, its clock started just
  before its connect, then every answer read as it comes, with a selector. What the client itself costs is
  a few tens of µs a request, so a figure is the server's: Slack's senders are many hosts, not one loop.
- "aiohttp": one aiohttp session sending them all, the figure earlier rounds quoted. Against a server that
  answers at once it measures 13 ms at p50 and 17–21 ms at p99 for 50 requests on an idle 2-core machine
  (issue 24 round 14, `git log -p BENCHMARKS.md`): its own loop's work on the other 49 requests is in every figure.

stdin: one JSON line `{"url": …, "requests": [[body, headers], …], "client": "raw"}`; stdout: one JSON line
`[[status, seconds], …]` (status 0: the connection ended before a whole answer).
"""

from __future__ import annotations

import asyncio
import json
import selectors
import socket
import sys
import time
from urllib.parse import urlsplit

import aiohttp

ANSWER_TIMEOUT_S = 30.0


async def post_all(url: str, requests: list[tuple[str, dict[str, str]]]) -> list[tuple[int, float]]:
    async with aiohttp.ClientSession() as http:

        async def one(body: str, headers: dict[str, str]) -> tuple[int, float]:
            began = time.perf_counter()
            async with http.post(url, data=body.encode(), headers=headers) as response:
                await response.read()
                return response.status, time.perf_counter() - began

        return list(await asyncio.gather(*(one(body, headers) for body, headers in requests)))


def wire_request(host: str, port: int, path: str, body: str, headers: dict[str, str]) -> bytes:
    """One HTTP/1.1 POST, whole, with `Connection: close`."""
    data = body.encode()
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(data)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items() if name.lower() != "content-length"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


def answered(buffer: bytes, ended: bool) -> int | None:
    """The answer's status once it is whole in `buffer` (0 if the connection `ended` before), else None."""
    head, separator, rest = buffer.partition(b"\r\n\r\n")
    if not separator:
        return 0 if ended else None
    status_line, *fields = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    length = next((int(v) for k, _, v in (f.partition(":") for f in fields) if k.strip().lower() == "content-length"),
                  None)
    if (length is not None and len(rest) >= length) or ended:
        return status
    return None


def post_raw(url: str, requests: list[tuple[str, dict[str, str]]]) -> list[tuple[int, float]]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    wires = [wire_request(host, port, parts.path or "/", body, headers) for body, headers in requests]
    results: list[tuple[int, float]] = [(0, ANSWER_TIMEOUT_S)] * len(wires)
    began: list[float] = []
    buffers: list[bytes] = [b""] * len(wires)
    with selectors.DefaultSelector() as selector:
        for index, wire in enumerate(wires):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            began.append(time.perf_counter())
            sock.connect((host, port))
            sock.sendall(wire)
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, index)
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while selector.get_map() and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1.0):
                sock, index = key.fileobj, key.data
                assert isinstance(sock, socket.socket)
                chunk = sock.recv(65536)
                now = time.perf_counter()
                buffers[index] += chunk
                status = answered(buffers[index], ended=not chunk)
                if status is not None:
                    results[index] = (status, now - began[index])
                    selector.unregister(sock)
                    sock.close()
        for key in list(selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
    return results


def main() -> None:
    job = json.loads(sys.stdin.readline())
    if job.get("client", "raw") == "raw":
        answers = post_raw(job["url"], job["requests"])
    else:
        answers = asyncio.run(post_all(job["url"], job["requests"]))
    print(json.dumps(answers), flush=True)


if __name__ == "__main__":
    main()
