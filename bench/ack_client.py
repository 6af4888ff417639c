"""Slack requests POSTed all at once from a process of its own, each timed to its answer there: the ack as a
client on another host sees it. In the bench's own process the client shared its event loop with the Slack Web
API peer taking every thread update of the streaming debates, and that loop's stalls (300–600 ms under load)
were counted in the front's ack.

stdin: one JSON line `{"url": …, "requests": [[body, headers], …]}`; stdout: one JSON line `[[status, seconds], …]`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import aiohttp


async def post_all(url: str, requests: list[tuple[str, dict[str, str]]]) -> list[tuple[int, float]]:
    async with aiohttp.ClientSession() as http:

        async def one(body: str, headers: dict[str, str]) -> tuple[int, float]:
            began = time.perf_counter()
            async with http.post(url, data=body.encode(), headers=headers) as response:
                await response.read()
                return response.status, time.perf_counter() - began

        return list(await asyncio.gather(*(one(body, headers) for body, headers in requests)))


def main() -> None:
    job = json.loads(sys.stdin.readline())
    print(json.dumps(asyncio.run(post_all(job["url"], job["requests"]))), flush=True)


if __name__ == "__main__":
    main()
