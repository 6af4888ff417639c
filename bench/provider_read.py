"""CPU of one streamed model call in this process, the answer's bytes read three ways, interleaved in one run:
`python -m bench.provider_read [--calls N] [--rounds R] [--words W]` (~2 min by default).

- `sdk`: through the SDK's `iter_bytes` (the SDK's, httpx2's decoded and raw bytes, httpx2's timer and the
  transport's generators, one after another for every piece);
- `direct`: straight off aiohttp's reader (`orchestrator.providers.sse.body`), each piece as it lands;
- `paced`: the product: the same, read at most every READ_EVERY_S (orchestrator/providers/paced_read.py), so
  the events that land in between come in one read.

Both SDKs (openai, anthropic) call the loopback LLM peer in a process of its own (bench.llm_peer: ~W
words an answer, one SSE event a word), N calls a round with 30 at once. CPU is this process's
(`time.process_time`, every thread) over a round ÷ N. Rounds rotate the ways' order (round 0 of each warms
up and is dropped); figures are medians.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bench.common import Table, bench_settings
from bench.llm_peer import PeerProcess, ReplyPlan
from orchestrator.debate.deltas import READ_EVERY_S
from orchestrator.providers import ProviderRegistry, sse
from orchestrator.providers.base import Message, ModelCall

NAME = "provider_read"
MODELS = ("openai:gpt-4o", "anthropic:claude-sonnet-4-5")
AT_ONCE = 30
WAYS = ("sdk", "direct", "paced")
_direct = sse.body


def _through_sdk(response: Any, every_s: float = 0.0) -> AsyncIterator[bytes]:
    return response.iter_bytes()


async def _round(provider: Any, call: ModelCall, calls: int) -> tuple[float, int]:
    """CPU ms per call over `calls` calls, and the deltas each streamed."""
    gate = asyncio.Semaphore(AT_ONCE)
    deltas = 0

    async def count(_piece: str) -> None:
        nonlocal deltas
        deltas += 1

    async def one() -> None:
        async with gate:
            await provider.complete(call, count)

    began = time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    return 1000 * (time.process_time() - began) / calls, deltas // calls


async def measure(calls: int, rounds: int, words: int) -> Table:
    table = Table(f"{NAME} — CPU per streamed call in-process, the body read through the SDK vs off aiohttp's "
                  f"reader ({calls} calls a round, {AT_ONCE} at once, ~{words}-word answers, {rounds} rounds)")
    async with PeerProcess(ReplyPlan(latency_s=0.05, tokens_per_s=400, debater_words=words)) as peer:
        with tempfile.TemporaryDirectory() as tmp:
            registry = ProviderRegistry(bench_settings(Path(tmp) / "x.db", peer.openai_base_url,
                                                       peer.anthropic_base_url))
            messages = (Message(role="system", content="You argue one side of a debate. " * 20),
                        Message(role="user", content="Bench debate #000001: the round so far. " * 30))
            try:
                for model in MODELS:
                    provider, name = registry.resolve(model)
                    call = ModelCall(model=name, messages=messages, max_tokens=4 * words + 200, timeout_s=60)
                    paced = call.model_copy(update={"read_every_s": READ_EVERY_S})
                    ms: dict[str, list[float]] = {way: [] for way in WAYS}
                    streamed: dict[str, int] = {}
                    for r in range(rounds + 1):
                        for way in WAYS[r % len(WAYS):] + WAYS[:r % len(WAYS)]:
                            sse.body = _through_sdk if way == "sdk" else _direct
                            cost, streamed[way] = await _round(provider, paced if way == "paced" else call, calls)
                            if r:
                                ms[way].append(cost)
                    sdk, direct, read = (statistics.median(ms[way]) for way in WAYS)
                    table.add(f"{model}: CPU per call, through the SDK / direct / paced (deltas a call: "
                              f"{streamed['sdk']} / {streamed['direct']} / {streamed['paced']})",
                              f"{sdk:.2f} / {direct:.2f} / {read:.2f} ms")
                    table.add(f"{model}: direct ÷ SDK; paced ÷ direct", f"{direct / sdk:.2f}; {read / direct:.2f}")
            finally:
                sse.body = _direct
                await registry.aclose()
                await peer.stop()
    return table


async def run(smoke: bool) -> Table:
    return await measure(calls=60 if smoke else 400, rounds=2 if smoke else 6, words=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--words", type=int, default=100)
    args = parser.parse_args()
    print(asyncio.run(measure(args.calls, args.rounds, args.words)).render())


if __name__ == "__main__":
    main()
