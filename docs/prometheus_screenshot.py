"""Makes docs/prometheus.png: Prometheus's own graph of a short run of debate-bot.

Starts a `debate serve --front-only`, a `debate worker` and Debian's `prometheus` with deploy/prometheus.yml
(scraping every second), drives waves of debates through the loopback Slack and LLM peers, then has headless
Chromium photograph Prometheus's graph page. A developer's tool, run from the repository root:

    .venv/bin/python -m docs.prometheus_screenshot [--out docs/prometheus.png] [--waves 6]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlencode

import yaml

from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer
from tests.llm_scripts import script_judge
from tests.test_durable_serve import command, slack_env, spawn
from tests.test_metrics import debate_rows
from tests.test_prometheus import both_scraped, local_config, start_prometheus, stop_all
from tests.test_serve import free_port, health_until

GRAPHS = (
    "sum(debate_debates_running)",
    "sum by (gen_ai_request_model) (rate(gen_ai_client_operation_duration_seconds_count[30s]))",
    "histogram_quantile(0.99, sum by (le, gen_ai_provider_name) "
    "(rate(gen_ai_client_operation_duration_seconds_bucket[30s])))",
)
TOPICS = ("Monorepo or polyrepo?", "Should we adopt gRPC?", "Postgres or DynamoDB?", "Feature flags in code?")


def graph_url(port: int, minutes: int) -> str:
    params: dict[str, str] = {}
    for n, expr in enumerate(GRAPHS):
        params |= {f"g{n}.expr": expr, f"g{n}.tab": "0", f"g{n}.range_input": f"{minutes}m"}
    return f"http://127.0.0.1:{port}/graph?{urlencode(params)}"


def photograph(url: str, out: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("chromium is not installed: apt-get install chromium")
    subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1400,2480", "--virtual-time-budget=15000", f"--screenshot={out.resolve()}", url],
                   check=True, capture_output=True, timeout=120)


async def run(out: Path, waves: int) -> None:
    prometheus_bin = shutil.which("prometheus")
    if prometheus_bin is None:
        raise SystemExit("prometheus is not installed: apt-get install prometheus")
    work = Path(tempfile.mkdtemp(prefix="debate-prom-"))
    front_port, worker_port, prom_port = free_port(), free_port(), free_port()
    (work / "prometheus.yml").write_text(yaml.safe_dump(local_config(front_port, worker_port)))
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack:
        llm.default = Reply(latency_s=0.4, tokens_per_s=60)  # turns that take a moment, so lines have a shape
        script_judge(llm, "A")
        env = slack_env(work, llm, slack, DEBATE_MAX_STARTS_PER_USER_HOUR="1000",
                        DEBATE_MAX_RUNNING_PER_USER="10", DEBATE_MAX_RUNNING_PER_CHANNEL="10")
        front = await spawn(work, env, "serve", "--slack", "--front-only", "--host", "127.0.0.1",
                            "--port", str(front_port))
        worker = await spawn(work, env, "worker", "--name", "w1", "--host", "127.0.0.1", "--port", str(worker_port))
        prometheus = await start_prometheus(prometheus_bin, work / "prometheus.yml", work, prom_port)
        try:
            for proc, port in ((front, front_port), (worker, worker_port)):
                for _ in range(10):  # a busy machine can take a while to import everything
                    with contextlib.suppress(AssertionError):
                        await health_until(f"http://127.0.0.1:{port}/healthz", proc, 200)
                        break
            await both_scraped(prom_port)
            started = 0
            for wave in range(waves):
                for n in range(wave % 3 + 2):
                    await command(front_port, TOPICS[(wave + n) % len(TOPICS)], slack, f"trigger-shot-{wave}-{n}")
                    started += 1
                await slack.wait_for(lambda _, started=started: sum(r["status"] == "completed"
                                                   for r in debate_rows(work / "debates.db")) == started,
                                     within=180)
                await asyncio.sleep(5)  # a gap between waves, so the graph shows them apart
            await asyncio.sleep(3)
            await asyncio.to_thread(photograph, graph_url(prom_port, 2), out)
        finally:
            await stop_all(prometheus, worker, front)
    print(f"{out}: {started} debates, graphs: {len(GRAPHS)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/prometheus.png"))
    parser.add_argument("--waves", type=int, default=6)
    args = parser.parse_args()
    asyncio.run(run(args.out, args.waves))


if __name__ == "__main__":
    main()
