"""Live viewers of debate pages, in a process of their own (so bench.page counts only the front's CPU):
`python -m bench.page_viewers URL…` opens one Server-Sent Events stream per URL, prints "ready" once
each has had its first event, then reads every stream until stdin closes."""

from __future__ import annotations

import asyncio
import sys

import aiohttp


async def view(http: aiohttp.ClientSession, url: str, first: asyncio.Event) -> None:
    async with http.get(url) as response:
        async for line in response.content:
            if line.startswith(b"event: "):
                first.set()


async def main(urls: list[str]) -> None:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as http:
        firsts = [asyncio.Event() for _ in urls]
        tasks = [asyncio.create_task(view(http, url, first)) for url, first in zip(urls, firsts, strict=True)]
        await asyncio.gather(*(first.wait() for first in firsts))
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.read)  # until the bench closes our stdin
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
