"""6. Tokens: prompt tokens per challenge debate at 1–5 rounds, with round summaries vs full history.

The counts are the fake LLM server's usage figures (ceil(characters / 4) of each prompt), summed over
every call a debate made: debater turns, round summaries and both judge passes. "Full history" is the
same format with the fold step turned off (`FullHistoryChallenge`, a bench-only subclass), so every
round carries the whole transcript. Replies are sized like real ones: debaters are told to stay under
about 500 words, summaries to write about 400 words.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import Table, bench_settings, challenge_spec
from bench.llm_peer import TAG, ReplyPlan, install_replies, is_judge, is_summary
from orchestrator.debate.engine import Engine
from orchestrator.debate.formats import register_format
from orchestrator.debate.formats.challenge import ChallengeFormat
from orchestrator.debate.run import DebateRun
from orchestrator.events import EventBus
from orchestrator.log import Store, StoreSink
from orchestrator.providers import ProviderRegistry
from tests.fakes.llm_server import FakeLLMServer, count_tokens

NAME = "tokens"
TARGET_RATIO = 0.6


class FullHistoryChallenge(ChallengeFormat):
    """The challenge format with no round summaries: every prompt carries the full prior transcript."""

    async def _fold_old_rounds(self, run: DebateRun, round_no: int) -> None:
        return None


@contextmanager
def challenge_format(cls: type[ChallengeFormat]) -> Iterator[None]:
    register_format("challenge", cls)
    try:
        yield
    finally:
        register_format("challenge", ChallengeFormat)


async def _debate_tokens(srv: FakeLLMServer, engine: Engine, store: Store, number: int, rounds: int
                         ) -> tuple[dict[str, int], int]:
    """Prompt tokens by kind of call for one debate, and what the engine's Outcome reported."""
    spec = challenge_spec(number, rounds)
    outcome = await engine.run(spec, EventBus(log=StoreSink(store)))
    if outcome.status != "completed":
        raise RuntimeError(f"tokens: debate {number} ended {outcome.status}: {outcome.error}")
    by_kind: dict[str, int] = defaultdict(int)
    for record in srv.requests:
        tag = TAG.search(record.prompt_text)
        if tag and int(tag.group(1)) == number:
            kind = "judge" if is_judge(record) else "summary" if is_summary(record) else "debater"
            by_kind[kind] += count_tokens(record.prompt_text)
    return by_kind, outcome.input_tokens


async def run(smoke: bool) -> Table:
    # debaters stay under ~500 words; the summary prompt asks for about 400 words
    plan = ReplyPlan(latency_s=0.0, tokens_per_s=0.0, debater_words=450, judge_words=300, summary_words=400)
    max_rounds = 5
    rows: dict[tuple[str, int], dict[str, int]] = {}
    mismatches = 0
    with tempfile.TemporaryDirectory(prefix="bench-tokens-") as tmp:
        async with FakeLLMServer() as srv:
            install_replies(srv, plan)
            settings = bench_settings(Path(tmp) / "tokens.db", srv.openai_base_url, srv.anthropic_base_url)
            registry = ProviderRegistry(settings)
            engine = Engine(registry, settings)
            async with Store(settings.debate_db) as store:
                number = 0
                for mode, cls in (("summaries", ChallengeFormat), ("full", FullHistoryChallenge)):
                    with challenge_format(cls):
                        for rounds in range(1, max_rounds + 1):
                            number += 1
                            by_kind, reported = await _debate_tokens(srv, engine, store, number, rounds)
                            mismatches += reported != sum(by_kind.values())
                            rows[(mode, rounds)] = by_kind
            await registry.aclose()
    table = Table(f"tokens — prompt tokens per challenge debate (debaters ~{plan.debater_words} words, "
                  f"summaries ~{plan.summary_words} words; all calls incl. judge)")
    for rounds in range(1, max_rounds + 1):
        summarized, full = rows[("summaries", rounds)], rows[("full", rounds)]
        s_total, f_total = sum(summarized.values()), sum(full.values())
        debaters = summarized["debater"] / full["debater"]
        table.add(f"{rounds} round(s): summaries / full history",
                  f"{s_total:,} / {f_total:,} = {s_total / f_total:.2f}")
        table.add(f"  debater prompts only ({summarized['debater']:,} / {full['debater']:,}); "
                  f"summary calls {summarized.get('summary', 0):,}", f"{debaters:.2f}")
    s5, f5 = sum(rows[("summaries", 5)].values()), sum(rows[("full", 5)].values())
    table.check("ratio at 5 rounds (all calls)", s5 / f5, ".2f", TARGET_RATIO)
    d5 = rows[("summaries", 5)]
    table.check("ratio at 5 rounds (debater + summary calls, judge excluded)",
                (d5["debater"] + d5.get("summary", 0)) / rows[("full", 5)]["debater"], ".2f", TARGET_RATIO)
    table.add("engine's Outcome.input_tokens = server usage", "yes" if not mismatches else f"{mismatches} differ",
              "equal", "pass" if not mismatches else "miss")
    del smoke  # the whole sweep takes a second or two: smoke runs it as is
    return table


if __name__ == "__main__":
    print(asyncio.run(run(False)).render())
