"""The loopback LLM peer the benches talk to: tests.fakes.llm_server.FakeLLMServer with fixed replies.

Every reply has a fixed latency and streaming rate; debaters, round summaries and the judge each get
deterministic text of a set length (the judge a valid verdict), so a debate's critical path is known.
`install_replies` scripts a server in this process; `python -m bench.llm_peer` runs one in a process
of its own (what the overhead and parallel benches use, so the peer's CPU is not counted as ours and
its event loop is not ours): it prints `PORT <n>`, serves until its stdin closes, then prints one
JSON line with its CPU time and every call's duration, which `PeerProcess.stop()` returns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
import time
from dataclasses import dataclass
from typing import Any

from bots import event_loop
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord

# The same split the fake server streams by (one piece per word, whitespace attached).
PIECES = re.compile(r"\s*\S+\s*|\s+")
TAG = re.compile(r"Bench debate #(\d{6})")
WORDS_IN_MODEL = re.compile(r"-w(\d+)$")

VOCABULARY = (
    "latency throughput ingest service rust python migration cost benchmark evidence memory safety borrow "
    "checker garbage collector tail p99 queue backpressure staffing hiring training incident postmortem "
    "deploy rollback feature flag canary budget quarter roadmap risk mitigation trade-off concession "
    "measured profile allocation serialization protocol schema contract compatibility vendor lock-in "
    "maintenance on-call pager alert dashboard capacity headroom cluster shard replica failover region"
).split()


def words(count: int, seed: int) -> str:
    """`count` words of plausible debate prose, deterministic for a seed, in short paragraphs."""
    out = []
    for i in range(count):
        word = VOCABULARY[(seed * 7919 + i * 104729 + i * i) % len(VOCABULARY)]
        out.append(word + (".\n\n" if i % 40 == 39 else "," if i % 9 == 8 else ""))
    return " ".join(out).strip()


def verdict_text(word_count: int) -> str:
    """A verdict the judge parser accepts, its reasoning padded so the whole reply is about `word_count` words."""
    body: dict[str, Any] = {  # evidence before the winner, as the judge prompt asks (or the pass is retried)
        "evidence": ["Round 1, Debater A: the benchmark shows the migration cost, which B never disputed."],
        "winner": "A",
        "reasoning": "",
        "ratings": {"genuine_disagreement": "high", "evidence_quality": "medium", "challenge_depth": "high"},
        "agreements": ["Both accept the migration cost, citing the round 1 benchmark."],
        "disagreements": ["Whether the team can staff it."],
        "unresolved": ["What the on-call load will be."],
        "recommendation": "Adopt it behind a feature flag for one quarter and measure p99 latency.",
    }
    base = len(PIECES.findall(json.dumps(body)))
    body["reasoning"] = "Debater A cited evidence. " + words(max(0, word_count - base - 4), 3)
    return "```json\n" + json.dumps(body) + "\n```"


def is_judge(record: RequestRecord) -> bool:
    return bool(record.messages) and "impartial judge" in record.messages[0]["content"]


def is_summary(record: RequestRecord) -> bool:
    return bool(record.messages) and "condense debate transcripts" in record.messages[0]["content"]


@dataclass(frozen=True)
class ReplyPlan:
    latency_s: float = 0.2
    tokens_per_s: float = 200.0
    debater_words: int = 100
    judge_words: int = 100
    summary_words: int = 100

    def ideal_s(self, text: str) -> float:
        """How long the peer takes for `text` when it keeps up: the latency, then one piece per 1/rate."""
        pieces = len(PIECES.findall(text))
        return self.latency_s + (pieces / self.tokens_per_s if self.tokens_per_s > 0 else 0.0)

    def kind(self, record: RequestRecord) -> str:
        return "judge" if is_judge(record) else "summary" if is_summary(record) else "debater"

    def text_for(self, record: RequestRecord) -> str:
        kind = self.kind(record)
        if kind == "judge":
            return verdict_text(self.judge_words)
        if kind == "summary":
            return words(self.summary_words, 2)
        match = WORDS_IN_MODEL.search(record.model)
        count = int(match.group(1)) if match else self.debater_words
        return words(count, len(record.messages) + len(record.last_user) % 97)


def install_replies(srv: FakeLLMServer, plan: ReplyPlan) -> None:
    """Script `srv`: every request gets the plan's text for its kind at the plan's latency and rate."""
    srv.default = Reply(text=None, latency_s=plan.latency_s, tokens_per_s=plan.tokens_per_s)
    srv.default_text = plan.text_for


def call_rows(srv: FakeLLMServer, plan: ReplyPlan) -> list[list[Any]]:
    """[tag, kind, duration_s, ideal_s, status, prompt_tokens, started_at, model] for every finished request
    (started_at is perf_counter, CLOCK_MONOTONIC on Linux, so it compares with time.monotonic() elsewhere)."""
    from tests.fakes.llm_server import count_tokens

    rows: list[list[Any]] = []
    for record in srv.requests:
        if record.finished_at is None:
            continue
        tag = TAG.search(record.prompt_text)
        rows.append([
            int(tag.group(1)) if tag else -1,
            plan.kind(record),
            record.finished_at - record.started_at,
            plan.ideal_s(plan.text_for(record)),
            record.status,
            count_tokens(record.prompt_text),
            record.started_at,
            record.model,
        ])
    return rows


@dataclass
class PeerStats:
    cpu_s: float
    calls: list[list[Any]]

    def lags(self) -> list[float]:
        return [c[2] - c[3] for c in self.calls if c[4] == 200]


class PeerProcess:
    """`async with PeerProcess(plan) as peer:` — the peer in a child process; `await peer.stop()` for stats."""

    def __init__(self, plan: ReplyPlan) -> None:
        self.plan = plan
        self.port = 0
        self._proc: asyncio.subprocess.Process | None = None
        self.stats: PeerStats | None = None

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> PeerProcess:
        p = self.plan
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.llm_peer", "--latency", str(p.latency_s), "--tps", str(p.tokens_per_s),
            "--words", str(p.debater_words), "--judge-words", str(p.judge_words),
            "--summary-words", str(p.summary_words),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=64 * 1024 * 1024,
        )
        assert self._proc.stdout is not None
        line = await asyncio.wait_for(self._proc.stdout.readline(), 30)
        if not line.startswith(b"PORT "):
            await self._kill()
            raise RuntimeError(f"the LLM peer did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    async def stop(self) -> PeerStats:
        if self.stats is not None:
            return self.stats
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        await asyncio.wait_for(proc.wait(), 30)
        data = json.loads(line)
        self.stats = PeerStats(cpu_s=data["cpu_s"], calls=data["calls"])
        return self.stats

    async def _kill(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()
            await self._proc.wait()

    async def __aexit__(self, *exc: object) -> None:
        if self.stats is None:
            if exc[0] is None:
                await self.stop()
            else:
                await self._kill()


async def _serve(plan: ReplyPlan) -> None:
    async with FakeLLMServer() as srv:
        install_replies(srv, plan)
        sys.stdout.write(f"PORT {srv.port}\n")
        sys.stdout.flush()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
        rows = call_rows(srv, plan)
    sys.stdout.write(json.dumps({"cpu_s": time.process_time(), "calls": rows}) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--tps", type=float, default=200.0)
    parser.add_argument("--words", type=int, default=100)
    parser.add_argument("--judge-words", type=int, default=100)
    parser.add_argument("--summary-words", type=int, default=100)
    args = parser.parse_args()
    # A client cut off mid-stream (the overhead bench's deadline) is expected, not an error worth a traceback.
    logging.basicConfig(level=logging.CRITICAL)
    plan = ReplyPlan(args.latency, args.tps, args.words, args.judge_words, args.summary_words)
    # On uvloop where installed, as the product's processes run: the peer shares the bench's cores with them
    # (at 1,000 debates, 10 s of CPU beside the product's 34 in issue 24 round 19)
    with asyncio.Runner(loop_factory=event_loop.factory("uvloop")) as runner:
        runner.run(_serve(plan))


if __name__ == "__main__":
    main()
