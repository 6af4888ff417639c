"""`/metrics` stays bounded whatever model names chat users type (issue 57 item 4): a fresh process
whose labels are set as a worker's runs 100 debates, each with a debater and a judge named for it alone, through the
real SDKs against the LLM peer; its scrape stays under 500 series and names none of the typed models
(they count as `other`). Labelled as before, the same run scraped 14,504 series (BENCHMARKS.md)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.llm_scripts import script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

ROOT = Path(__file__).resolve().parent.parent


async def test_a_scrape_after_100_debates_with_100_typed_model_names_stays_under_500_series() -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.metrics_cardinality_run", srv.openai_base_url, "100", cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 600)
        assert proc.returncode == 0, err.decode()[-2000:]
        typed = {r.model for r in srv.requests if "typed" in r.model}
    assert len(typed) == 200, "every debate's typed debater and judge were called"
    scrape = json.loads(out.decode().strip().splitlines()[-1])
    print(f"scrape after 100 debates with 200 typed model names: {scrape['series']} series, {scrape['bytes']} bytes")
    assert scrape["series"] < 500, scrape["series"]
    assert "other" in scrape["models"] and not [m for m in scrape["models"] if "typed" in m], scrape["models"]
    assert "gpt-5-mini" in scrape["models"], "a priced (or configured) model keeps its own label"
