"""A real Prometheus (Debian's `prometheus`, installed by .ci/run) scraping a `debate serve --front-only`
and a `debate worker` with deploy/prometheus.yml: after a few debates driven through the loopback peers,
every query of the Grafana dashboard (deploy/grafana/debate-bot.json) evaluates and returns data."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.durable_serve_harness import command, serving, slack_env, spawn, stopped
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer
from tests.llm_scripts import script_judge
from tests.metrics_harness import CHALLENGE, debate_rows
from tests.serve_harness import free_port, health_until

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS = shutil.which("prometheus")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    PROMETHEUS is None and not os.environ.get("CI"),
    reason="Debian's prometheus is not installed here (.ci/run installs it)")]


def dashboard_queries() -> list[str]:
    dashboard = json.loads((ROOT / "deploy/grafana/debate-bot.json").read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def local_config(front: int, worker: int) -> dict[str, Any]:
    """deploy/prometheus.yml as shipped, scraping this test's processes every second."""
    config = yaml.safe_load((ROOT / "deploy/prometheus.yml").read_text())
    config["global"]["scrape_interval"] = config["global"]["evaluation_interval"] = "1s"
    ports = {"debate-fronts": front, "debate-workers": worker}
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == set(ports)
    for name, port in ports.items():
        jobs[name]["static_configs"] = [{"targets": [f"127.0.0.1:{port}"]}]
    return config


async def query(http: aiohttp.ClientSession, port: int, expr: str) -> list[Any]:
    async with http.get(f"http://127.0.0.1:{port}/api/v1/query", params={"query": expr}) as response:
        body = await response.json()
    assert body["status"] == "success", (expr, body)
    return body["data"]["result"]


Results = dict[str, list[Any]]


async def every_query_has_data(port: int, queries: list[str], within: float,
                               settled: Callable[[Results], bool] = lambda _: True) -> Results:
    """Every query's result once each has data and `settled(results)` holds (a scrape may come between a
    debate's end in the log and the gauges' update in its process)."""
    async with aiohttp.ClientSession() as http:
        deadline = asyncio.get_running_loop().time() + within
        while True:
            results = {expr: await query(http, port, expr) for expr in queries}
            empty = [expr for expr, result in results.items() if not result]
            if not empty and settled(results):
                return results
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no data for: {empty}" if empty else "the results never settled")
            await asyncio.sleep(1)


async def both_scraped(port: int) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(120):
            with contextlib.suppress(aiohttp.ClientError):
                if [r["value"][1] for r in await query(http, port, "up")] == ["1", "1"]:
                    return
            await asyncio.sleep(0.5)
    raise AssertionError("prometheus never scraped both processes")


async def start_prometheus(binary: str, config: Path, work: Path, port: int) -> asyncio.subprocess.Process:
    """Debian's Prometheus with `config`, its data under `work`, answering on 127.0.0.1:`port`."""
    return await asyncio.create_subprocess_exec(
        binary, f"--config.file={config}", f"--storage.tsdb.path={work / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}", cwd=work,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)


async def stop_all(prometheus: asyncio.subprocess.Process, worker: asyncio.subprocess.Process,
                   front: asyncio.subprocess.Process) -> None:
    """Prometheus first, then the worker (whose exit status is not the point) and the front (whose is)."""
    prometheus.terminate()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(prometheus.wait(), 10)
    with contextlib.suppress(AssertionError):
        await stopped(worker)
    await stopped(front)


async def test_prometheus_evaluates_every_dashboard_query_on_a_live_front_and_worker(tmp_path: Path) -> None:
    assert PROMETHEUS is not None, "prometheus must be installed in CI (.ci/run)"
    front_port, worker_port, prom_port = free_port(), free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump(local_config(front_port, worker_port)))
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack:
        script_judge(llm, "A")
        llm.add_rule(Reply(status=500), match=CHALLENGE, times=1)  # one failed model call
        slack.rate_limit("chat.postMessage", times=1)  # one 429
        env = slack_env(tmp_path, llm, slack)
        front = await serving(tmp_path, env, front_port, "--front-only")
        worker = await spawn(tmp_path, env, "worker", "--name", "w1", "--host", "127.0.0.1", "--port",
                             str(worker_port))
        prometheus = await start_prometheus(PROMETHEUS, config, tmp_path, prom_port)
        try:
            await health_until(f"http://127.0.0.1:{worker_port}/healthz", worker, 200)
            await both_scraped(prom_port)  # so the counters' first samples come before the debates
            for n, topic in enumerate(("Monorepo or polyrepo?", "Should we adopt gRPC for internal calls?")):
                await command(front_port, topic, slack, f"trigger-prometheus-{n}")
            await slack.wait_for(lambda _: [r["status"] for r in debate_rows(tmp_path / "debates.db")]
                                 == ["completed", "completed"], within=120)
            results = await every_query_has_data(prom_port, dashboard_queries(), within=60, settled=lambda r: float(
                r["sum(debate_debates_running)"][0]["value"][1]) == 0)  # the worker's gauge, scraped after both ended
        finally:
            await stop_all(prometheus, worker, front)

    running = results["sum(debate_debates_running)"]
    assert float(running[0]["value"][1]) == 0
    failures = results["sum by (error_type) (increase(debate_model_call_failures_total[1h]))"]
    assert {r["metric"]["error_type"] for r in failures} and sum(float(r["value"][1]) for r in failures) > 0
