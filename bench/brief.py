"""15. The brief: what reading a 200-page PDF costs, and what a 50-section brief adds to each round's prompts
with and without section selection.

Extraction runs the product's own path (`extract`: pypdf in a child process under its page, time and
memory limits) on a PDF written here, 200 pages of about 1,800 characters each; the best and median of a
few runs are printed, and a 300-page PDF shows the page limit's cut. Prompt tokens come from a 3-round
challenge debate through the real engine and SDKs against the loopback LLM peer (its usage figures:
ceil(characters / 4) of each prompt), with a 50-section Markdown brief of about 2,600 characters a section;
"without selection" is the same debate with the brief's prompt budget lifted past the whole brief.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.common import Table, bench_settings, challenge_spec
from bench.llm_peer import ReplyPlan, install_replies, is_judge, is_summary
from orchestrator.brief import select as selecting
from orchestrator.brief.extract import extract
from orchestrator.brief.gather import Material, gather
from orchestrator.brief.models import Brief
from orchestrator.debate.engine import Engine
from orchestrator.events import EventBus
from orchestrator.providers import ProviderRegistry
from tests.fakes.llm_server import FakeLLMServer, count_tokens
from tests.pdf_maker import make_pdf

NAME = "brief"
ROUNDS = 3
WORDS = ("latency", "queue", "staffing", "budget", "migration", "vendor", "backup", "schema", "oncall", "cache")


def _pdf(pages: int) -> bytes:
    line = "The ingest queue keeps p99 latency under 40 ms at 3,000 writes a second during the pilot."
    return make_pdf(["\n".join(f"{n}.{i} {line}" for i in range(20)) for n in range(1, pages + 1)],
                    title=f"{pages}-page report")


async def _extraction(table: Table, runs: int) -> None:
    data = _pdf(200)
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        got = await extract(data, "pdf", name="report.pdf")
        times.append(time.perf_counter() - began)
    table.add("200-page PDF: size", f"{len(data) / 2**20:.2f} MB")
    table.add("200-page PDF: characters read", f"{len(got.text):,}")
    table.add("200-page PDF: extraction, best", f"{min(times):.2f} s")
    table.add("200-page PDF: extraction, median", f"{statistics.median(times):.2f} s", f"runs: {runs}")
    began = time.perf_counter()
    cut = await extract(_pdf(300), "pdf", name="long.pdf")
    table.add("300-page PDF: extraction (cut at 200 pages)", f"{time.perf_counter() - began:.2f} s", cut.note)


async def _fifty_sections() -> Brief:
    parts = []
    for n in range(50):
        word = WORDS[n % len(WORDS)]
        body = " ".join(f"The {word} figure for part {n} is {n * 7} units, per line {i}." for i in range(45))
        parts.append(f"## Part {n}: {word}\n{body}")
    brief = await gather([Material(origin="handbook.md", name="handbook.md", data="\n\n".join(parts).encode())])
    assert len(brief.sources[0].sections) == 50, len(brief.sources[0].sections)
    return brief


async def _debate_tokens(brief: Brief, budget: int) -> tuple[list[int], list[int]]:
    """Prompt tokens of each debater call and each judge call of one debate with `brief` at `budget`."""
    saved = selecting.PROMPT_CHARS
    selecting.PROMPT_CHARS = budget
    try:
        async with FakeLLMServer() as srv:
            install_replies(srv, ReplyPlan(latency_s=0.0, tokens_per_s=100_000.0))
            with tempfile.TemporaryDirectory() as folder:
                settings = bench_settings(Path(folder) / "b.db", srv.openai_base_url, srv.anthropic_base_url)
                registry = ProviderRegistry(settings)
                try:
                    spec = challenge_spec(1, ROUNDS, topic="Should we move ingest to a queue given the latency "
                                          "and staffing figures?").model_copy(update={"brief": brief})
                    outcome = await Engine(registry, settings).run(spec, EventBus([]))
                finally:
                    await registry.aclose()
            assert outcome.status == "completed", outcome.error
            debaters = [count_tokens(r.prompt_text) for r in srv.requests if not is_judge(r) and not is_summary(r)]
            judges = [count_tokens(r.prompt_text) for r in srv.requests if is_judge(r)]
            return debaters, judges
    finally:
        selecting.PROMPT_CHARS = saved


async def run(smoke: bool) -> Table:
    table = Table("brief: a 200-page PDF and a 50-section brief")
    await _extraction(table, 1 if smoke else 3)
    brief = await _fifty_sections()
    table.add("50-section brief: characters", f"{brief.chars:,}")
    chosen, chosen_judge = await _debate_tokens(brief, selecting.PROMPT_CHARS)
    whole, whole_judge = await _debate_tokens(brief, 10**9)
    per_round = len(chosen) / ROUNDS
    table.add("prompt tokens per round, with selection", f"{sum(chosen) / ROUNDS:,.0f}",
              f"{per_round:.0f} debater calls a round")
    table.add("prompt tokens per round, without selection", f"{sum(whole) / ROUNDS:,.0f}")
    table.add("prompt tokens per debater call, with / without", f"{statistics.mean(chosen):,.0f} / "
              f"{statistics.mean(whole):,.0f}")
    table.add("prompt tokens per judge pass, with / without", f"{statistics.mean(chosen_judge):,.0f} / "
              f"{statistics.mean(whole_judge):,.0f}")
    table.note(f"selection budget: {selecting.PROMPT_CHARS:,} characters of the brief per prompt (about "
               f"{selecting.PROMPT_CHARS // 4:,} tokens); the whole brief is ~{brief.chars // 4:,} tokens")
    return table
