"""16. Evidence checks: what checking the debaters' citations adds to a debate's wall time and to the judge's
prompt, and what one check costs on a long source.

A 2-round challenge with a brief runs through the real engine and SDKs against the loopback LLM peer (each
call 0.3 s of latency, then 400 words a second), its debaters' turns citing the brief three times and a
loopback page once (allowed by DEBATE_FETCH_ALLOW_HOSTS), against the same debate with the same words and no
citation form (the brackets dropped: nothing to check, no step). The judge's prompt is compared between the
cited debate with its checks and the same debate with checking taken out (its marks and the weighing note).
One brief check is timed on a 200,000-character source (the brief's cap), first and cached.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Table, bench_settings, challenge_spec
from bench.llm_peer import is_judge, verdict_text
from orchestrator.brief.gather import Material, gather
from orchestrator.brief.models import Brief
from orchestrator.debate.engine import Engine
from orchestrator.debate.run import DebateRun
from orchestrator.events import EventBus
from orchestrator.evidence import EvidenceChecker, Haystack, find_quote
from orchestrator.providers import ProviderRegistry
from tests.fakes.llm_server import FakeLLMServer, Reply, count_tokens
from tests.fakes.web_source import SourceServer

NAME = "evidence"
DESIGN = ("# Design\nWe keep one database for ingest and reporting.\n\n## Costs\nHosting is 3k a month, and the "
          "backups cost nothing extra.\n\n## Risks\nThe backfill cannot be paused once it has started.")
PAGE = b"# Survey\nMost teams that moved to a queue reported fewer paging incidents within two quarters."
SLOW_PAGE_S = 2.0  # a slow site: the first turn's check reads it while the next turn runs
FILLER = " ".join(["The argument goes on with ordinary words about the plan and its tradeoffs."] * 8)


def _turn(url: str, cited: bool) -> str:
    quotes = [("S1 §2", "Hosting is 3k a month"), ("S1 §3", "The backfill cannot be paused once it has started"),
              ("S1 §1", "We keep one database for ingest and reporting"),
              (url, "teams that moved to a queue reported fewer paging incidents")]
    said = [f'[{where} "{quote}"]' if cited else f'"{quote}"' for where, quote in quotes]
    return f"{FILLER} As {said[0]} and {said[1]}, {said[2]}; {said[3]}. {FILLER}"


async def _debate(brief: Brief, cited: bool, *, check: bool = True, page_s: float = 0.0) -> tuple[float, list[int]]:
    """Wall time of one 2-round debate and its judge prompts' tokens; `page_s`: the cited page's answer time."""
    saved = DebateRun.check_evidence

    async def unchecked(run: DebateRun, turn: Any) -> None:
        return None

    if not check:
        DebateRun.check_evidence = unchecked  # type: ignore[method-assign]
    try:
        async with FakeLLMServer() as srv, SourceServer() as web:
            web.pages["/survey.md"] = ("text/markdown", PAGE)
            web.delays["/survey.md"] = page_s
            srv.add_rule(Reply(text=verdict_text(100), latency_s=0.3, tokens_per_s=400.0), match=is_judge)
            srv.default = Reply(text=_turn(web.url("/survey.md"), cited), latency_s=0.3, tokens_per_s=400.0)
            with tempfile.TemporaryDirectory() as folder:
                settings = bench_settings(Path(folder) / "b.db", srv.openai_base_url, srv.anthropic_base_url,
                                          DEBATE_FETCH_ALLOW_HOSTS=web.allow_hosts)
                registry = ProviderRegistry(settings)
                try:
                    spec = challenge_spec(1, 2).model_copy(update={"brief": brief})
                    began = time.perf_counter()
                    outcome = await Engine(registry, settings).run(spec, EventBus([]))
                    wall = time.perf_counter() - began
                finally:
                    await registry.aclose()
            assert outcome.status == "completed", outcome.error
            return wall, [count_tokens(r.prompt_text) for r in srv.requests if is_judge(r)]
    finally:
        DebateRun.check_evidence = saved  # type: ignore[method-assign]


async def _one_check(table: Table) -> None:
    random.seed(16)
    words = "the ingest queue keeps latency under forty ms at three thousand writes a second in the pilot".split()
    text = " ".join(random.choice(words) for _ in range(35_000))[:200_000]
    began = time.perf_counter()
    ready = Haystack.of(text)
    prepared = time.perf_counter() - began
    began = time.perf_counter()
    find_quote("the backfill cannot be paused once it has started by the operator", ready)
    table.add("one quote on a 200,000-character source: normalising the source (once a debate)",
              f"{prepared * 1000:.0f} ms")
    table.add("one quote on a 200,000-character source: matching", f"{(time.perf_counter() - began) * 1000:.0f} ms")
    brief = await gather([Material(origin="design.md", name="design.md", data=DESIGN.encode())])
    checker = EvidenceChecker(brief, None)  # type: ignore[arg-type]  # brief quotes only: no fetcher used
    began = time.perf_counter()
    await checker.check_text("A", 1, _turn("https://example.invalid/", True).split("; [https")[0])
    table.add("three brief citations of a turn, checked", f"{(time.perf_counter() - began) * 1000:.1f} ms")


async def run(smoke: bool) -> Table:
    table = Table("evidence: checking citations in a 2-round challenge")
    brief = await gather([Material(origin="design.md", name="design.md", data=DESIGN.encode())])
    runs = 1 if smoke else 3
    plain, cited, unchecked = [], [], []
    for _ in range(runs):  # interleaved, so the machine's drift weighs on all three
        plain.append((await _debate(brief, cited=False))[0])
        cited.append(await _debate(brief, cited=True))
        unchecked.append(await _debate(brief, cited=True, check=False))
    plain_s, cited_s = statistics.median(plain), statistics.median(w for w, _ in cited)
    unchecked_s = statistics.median(w for w, _ in unchecked)
    table.add("2-round debate, no citations: wall time (median)", f"{plain_s:.2f} s", f"runs: {runs}")
    table.add("2-round debate, 4 citations a turn (3 brief, 1 loopback page), not checked: wall time (median)",
              f"{unchecked_s:.2f} s")
    table.add("the same, checked: wall time (median)", f"{cited_s:.2f} s")
    table.check("  added by checking (checked against not checked, the same words)",
                (cited_s - unchecked_s) / unchecked_s * 100, ".1f", 5.0, " %")
    slow = [(await _debate(brief, cited=True, page_s=SLOW_PAGE_S))[0] for _ in range(runs)]
    table.add(f"the same, checked, the page answering in {SLOW_PAGE_S:.0f} s: wall time (median)",
              f"{statistics.median(slow):.2f} s")
    table.check(f"  added by a {SLOW_PAGE_S:.0f} s page (read once; checked in line it would add at least "
                f"{SLOW_PAGE_S:.0f} s)", (statistics.median(slow) - unchecked_s) / unchecked_s * 100, ".1f", 5.0,
                " %")
    judge_checked = statistics.mean(cited[0][1])
    judge_unchecked = statistics.mean(unchecked[0][1])
    table.add("judge prompt tokens, cited debate: unchecked / checked",
              f"{judge_unchecked:,.0f} / {judge_checked:,.0f}")
    table.check("  judge prompt growth from the checks", (judge_checked - judge_unchecked) / judge_unchecked * 100,
                ".1f", 15.0, " %")
    await _one_check(table)
    table.note("checking runs beside the next turn, and only the judge waits for it: a brief quote costs "
               "milliseconds, a page at most the fetch limit (10 s), read once a debate however often it is cited; "
               "the cited turns are longer (the citation form's words), which the no-citations row includes")
    return table
