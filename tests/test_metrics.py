"""`GET /metrics` of a real `debate serve` and a real `debate worker`, scraped after debates driven
through the loopback peers, parsed with prometheus_client's own parser: the counts equal what the
peers saw (calls, retries, tokens, 429s, failures), and no label carries a user, channel, topic or id."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests.durable_serve_harness import command, serving, slack_env, spawn, stopped
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer
from tests.llm_scripts import is_judge, script_judge
from tests.metrics_harness import CHALLENGE, completed, debate_rows
from tests.serve_harness import free_port, health_until

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

TOPIC = "Should the billing service move to event sourcing?"
OPENING = "You open the debate as the proposer"


async def scrape(port: int) -> list[Sample]:
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=")
        text = await response.text()
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def total(samples: Iterable[Sample], name: str, **labels: str) -> float:
    return sum(s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def assert_no_unbounded_labels(samples: list[Sample], rows: list[sqlite3.Row]) -> None:
    forbidden = {"U1", "C7", "T1", TOPIC} | {r["id"] for r in rows} | {r["thread"] for r in rows if r["thread"]}
    for sample in samples:
        for value in sample.labels.values():
            assert not any(f and f in value for f in forbidden), (sample.name, sample.labels)


async def settled(port: int, slack: SlackAPIPeer) -> list[Sample]:
    """The front's metrics once its thread writes are all answered: a scrape right after the verdict can
    come while the root's last edit is still on its way (the peer has it, the client not yet its answer)."""
    for _ in range(100):
        samples = await scrape(port)
        answered = len([c for c in slack.calls if c.method in ("chat.postMessage", "chat.update")])
        if total(samples, "debate_platform_writes_total", platform="slack") == answered \
                and total(samples, "debate_render_backlog_events") == 0:
            return samples
        await asyncio.sleep(0.1)
    return samples


async def test_serve_counts_model_calls_retries_tokens_and_slack_429s(tmp_path: Path) -> None:
    port = free_port()
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack:
        script_judge(llm, "A")
        llm.add_rule(Reply(status=429, retry_after=0.01), match=OPENING, times=1)  # the SDK sends it again
        slack.rate_limit("chat.postMessage", times=1)
        env = slack_env(tmp_path, llm, slack, DEBATE_MAX_RETRIES="1")
        proc = await serving(tmp_path, env, port)
        try:
            await command(port, TOPIC, slack, "trigger-metrics-1")
            await completed(tmp_path / "debates.db", slack)
            samples = await settled(port, slack)
        finally:
            await stopped(proc)

    (row,) = debate_rows(tmp_path / "debates.db")
    calls = total(samples, "gen_ai_client_operation_duration_seconds_count")
    assert calls == len(llm.requests) - 1 >= 4  # every call the bot made, its retry not counted as a call
    assert total(samples, "debate_model_call_retries_total") == 1
    assert total(samples, "gen_ai_client_token_usage_sum", gen_ai_token_type="input") == row["input_tokens"] > 0
    assert total(samples, "gen_ai_client_token_usage_sum", gen_ai_token_type="output") == row["output_tokens"] > 0
    judged = [r for r in llm.requests if is_judge(r)]
    assert total(samples, "gen_ai_client_operation_duration_seconds_count", gen_ai_request_model=judged[0].model,
                 gen_ai_operation_name="chat") >= len(judged)
    assert total(samples, "debate_model_cost_usd_total") > 0
    assert total(samples, "debate_model_time_to_first_token_seconds_count") == calls

    posts = slack.of("chat.postMessage")
    assert total(samples, "debate_platform_writes_total", platform="slack", method="chat.postMessage",
                 outcome="rate_limited") == 1
    assert total(samples, "debate_platform_writes_total", platform="slack", method="chat.postMessage",
                 outcome="ok") == len(posts) - 1
    assert total(samples, "debate_platform_writes_total", platform="slack", method="chat.update",
                 outcome="ok") == len(slack.of("chat.update"))
    assert total(samples, "debate_debates_started_total", platform="slack", format="challenge") == 1
    assert total(samples, "debate_debates_finished_total", platform="slack", format="challenge",
                 status="completed") == 1
    assert total(samples, "debate_debates_running") == 0
    assert total(samples, "debate_command_ack_seconds_count", platform="slack") == 1
    assert total(samples, "debate_log_write_failures_total") == 0
    assert_no_unbounded_labels(samples, [row])


async def test_a_worker_counts_its_calls_and_failures_and_a_front_its_writes(tmp_path: Path) -> None:
    port, worker_port = free_port(), free_port()
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack:
        script_judge(llm, "A")
        llm.add_rule(Reply(status=500), match=CHALLENGE, times=1)  # the challenger's one call fails
        env = slack_env(tmp_path, llm, slack)
        front = await serving(tmp_path, env, port, "--front-only")
        worker = await spawn(tmp_path, env, "worker", "--name", "w1", "--host", "127.0.0.1", "--port",
                             str(worker_port))
        try:
            await health_until(f"http://127.0.0.1:{worker_port}/healthz", worker, 200)
            await command(port, TOPIC, slack, "trigger-metrics-2")
            await completed(tmp_path / "debates.db", slack)
            at_front = await settled(port, slack)
            at_worker = await scrape(worker_port)
        finally:
            with contextlib.suppress(AssertionError):
                await stopped(worker)
            await stopped(front)

    (row,) = debate_rows(tmp_path / "debates.db")
    (failed,) = [r for r in llm.requests if CHALLENGE in r.last_user]
    provider = "anthropic" if failed.model.startswith("claude") else "openai"
    assert total(at_worker, "debate_model_call_failures_total", gen_ai_provider_name=provider) == 1
    assert total(at_worker, "debate_model_call_failures_total") == 1
    errors = {s.labels["error_type"] for s in at_worker
              if s.name == "gen_ai_client_operation_duration_seconds_count" and s.labels["error_type"]}
    assert len(errors) == 1 and errors != {""}
    assert total(at_worker, "gen_ai_client_operation_duration_seconds_count") == len(llm.requests)
    assert total(at_worker, "debate_debates_finished_total", platform="slack", status="completed") == 1
    assert total(at_worker, "debate_platform_writes_total") == 0  # a worker writes to no platform

    assert total(at_front, "gen_ai_client_operation_duration_seconds_count") == 0  # a front calls no model
    assert total(at_front, "debate_platform_writes_total", platform="slack", outcome="ok") == (
        len(slack.of("chat.postMessage")) + len(slack.of("chat.update")))
    assert total(at_front, "debate_command_ack_seconds_count", platform="slack") == 1
    assert_no_unbounded_labels(at_worker + at_front, [row])
