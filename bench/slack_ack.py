"""3. Slack ack: signed `/debate` POSTs, 50 at once, into the real HTTP-mode server; time to the 200.

The server is `bots.slack.serve.serve_http` with the bolt app from `build_app` (signature check, the 200;
bolt's dispatch and our listener run after it, bots/slack/routes.py), started by the tests' `SlackBot`
harness and talking to the tests' `SlackAPIPeer`. Each command starts a real debate against the LLM peer (in
its own process), so later batches are acked while earlier debates stream: the ack competes with real
work, as in production.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from bench.common import CHALLENGER, JUDGE, PROPOSER, Table, bench_settings, percentile
from bench.llm_peer import PeerProcess, ReplyPlan
from tests.fakes.slack_api import SIGNING_SECRET, SlackAPIPeer, SlackBot, slash_body

NAME = "slack_ack"
TARGET_P99_MS = 50.0


async def run(smoke: bool) -> Table:
    concurrency, batches = (5, 1) if smoke else (50, 4)
    plan = ReplyPlan(latency_s=0.2, tokens_per_s=200.0)
    table = Table(f"slack-ack — {batches} × {concurrency} concurrent signed /debate POSTs to /slack/events "
                  "(HTTP mode), each starting a debate in its own channel")
    seconds: list[float] = []
    statuses: list[int] = []
    with tempfile.TemporaryDirectory(prefix="bench-slack-") as tmp:
        async with PeerProcess(plan) as llm, SlackAPIPeer() as slack:
            settings = bench_settings(
                Path(tmp) / "slack.db", llm.openai_base_url, llm.anthropic_base_url,
                SLACK_BOT_TOKEN="xoxb-bench-token", SLACK_SIGNING_SECRET=SIGNING_SECRET,
                SLACK_API_BASE_URL=slack.base_url,
            )
            async with SlackBot(settings) as bot:
                await bot.command("help", slack)  # warm: bolt's first dispatch, the client session
                await bot.settle()
                number = 0
                for _ in range(batches):
                    bodies = []
                    for _ in range(concurrency):
                        number += 1
                        text = (f"Bench debate #{number:06d}: Kafka or RabbitMQ for the audit log? --rounds 1 "
                                f"--vs {PROPOSER},{CHALLENGER} --judge {JUDGE}")
                        bodies.append(slash_body(text, channel=f"C{number:04d}", user=f"U{number:04d}",
                                                 response_url=slack.response_url(f"r{number}"),
                                                 trigger=f"bench-{number}"))

                    async def post(body: str) -> None:
                        began = time.perf_counter()
                        status, _ = await bot.post(body)
                        seconds.append(time.perf_counter() - began)
                        statuses.append(status)

                    await asyncio.gather(*(post(b) for b in bodies))
                    await asyncio.sleep(0.5)  # the debates run on while the next batch arrives
                started = len(await bot.core.store.history(1000))
                in_listener = [t * 1000 for t in bot.runtime.ack_times]  # body read → answer, the last 100
                await bot.runtime.shutdown()
    ms = [s * 1000 for s in seconds]
    table.add(f"requests answered 200 (of {len(statuses)})", f"{statuses.count(200)}", f"{len(statuses)}",
              "pass" if statuses.count(200) == len(statuses) else "miss")
    table.add("ack p50", f"{percentile(ms, 50):.1f} ms")
    table.check("ack p99", percentile(ms, 99), ".1f", TARGET_P99_MS, " ms")
    table.add("ack max", f"{max(ms):.1f} ms")
    table.add("  of which in the route (body read → answered; bolt runs after), p50 / p99 of the last 100",
              f"{percentile(in_listener, 50):.1f} / {percentile(in_listener, 99):.1f} ms")
    table.note("the POSTing client shares the server's event loop (the tests' SlackBot harness), so its own "
               "work is in the figure too")
    table.add("debates started while the batches arrived", f"{started}")
    return table


if __name__ == "__main__":
    print(asyncio.run(run(False)).render())
