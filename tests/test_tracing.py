"""Traces as an operator's collector sees them: a real `debate run` subprocess exporting over OTLP/HTTP
(the SDK's own exporter) to a loopback collector, the real SDKs talking to the fake LLM server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from tests.cli_harness import ROOT, debate, two_providers
from tests.durable_serve_harness import command, rows, serving, slack_env, spawn, stopped
from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.otlp_collector import OTLPCollector, ReceivedSpan
from tests.fakes.slack_api import SlackAPIPeer
from tests.llm_scripts import is_judge, script_judge
from tests.serve_harness import discord_verdict_posted, free_port, health_until, slack_verdict_posted

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

TOPIC = "Should the billing service move to event sourcing?"
OTEL_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME",
             "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER")
OURS = ("debate", "round ", "chat ", "judge ")  # the spans we make (the anthropic SDK adds its own below chat)
# every tracing hook used with tracing off, then the OpenTelemetry modules loaded, as JSON on stdout
HOOKS_OFF = """
import json, sys
from bots.telemetry import write_trace
from orchestrator import tracing
from orchestrator.debate import engine, judge
from orchestrator.durable.config import dbos_config

assert tracing.configure_tracing("run") is False and not tracing.enabled()
with tracing.span("debate", {"gen_ai.conversation.id": "d1"}) as span:
    tracing.note(span, {"debate.status": "completed"}, error="timeout")
tracing.close(tracing.open_span("round 1", {}))
tracing.end(tracing.start_span("slack chat.update", {}), {})
assert not write_trace("slack").on_request_start, "off, a request costs no span callback"
assert "enable_otlp" not in dbos_config("sqlite:///x.sqlite", "worker-x")
print(json.dumps(sorted(m for m in sys.modules if m.startswith("opentelemetry"))))
"""


def traced_env(tmp_path: Path, srv: FakeLLMServer, **otel: str) -> dict[str, str]:
    env = {k: v for k, v in two_providers(tmp_path, srv).items() if k not in OTEL_VARS}
    env.update(otel)
    return env


def strings_in(span: ReceivedSpan) -> list[str]:
    return [str(v) for v in (*span.attributes.values(), *span.resource.values())]


async def test_a_debate_run_exports_one_trace_with_its_rounds_calls_and_judge_passes(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv, OTLPCollector() as collector:
        script_judge(srv, "A")
        env = traced_env(tmp_path, srv, OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_SERVICE_NAME="debates-ci")
        code, out, err = await debate(tmp_path, "run", TOPIC, "--json", env=env)
        assert code == 0, err
        debate_id = json.loads(out)["id"]
        calls = list(srv.requests)
        # the process flushed its spans before it exited: everything is here
        (root,) = collector.spans_named("debate")

    assert root.parent_id == "" and root.attributes["gen_ai.conversation.id"] == debate_id
    assert root.attributes["debate.format"] == "challenge" and root.attributes["debate.platform"] == "cli"
    assert root.attributes["debate.status"] == "completed"
    assert root.resource["service.name"] == "debates-ci" and root.resource["debate.role"] == "run"
    assert {s.trace_id for s in collector.spans} == {root.trace_id}, "one trace per debate"
    ours = [s for s in collector.spans if s.name.startswith(OURS)]
    assert all(s.attributes["gen_ai.conversation.id"] == debate_id for s in ours)

    rounds = {s.name: s for s in collector.spans if s.name.startswith("round ")}
    assert set(rounds) == {"round 1", "round 2"}
    assert all(r.parent_id == root.span_id for r in rounds.values())
    passes = {s.name: s for s in collector.spans if s.name.startswith("judge ")}
    assert set(passes) == {"judge seated", "judge swapped"}
    assert all(p.parent_id == root.span_id and p.attributes["debate.judge.usable"] for p in passes.values())

    chats = [s for s in collector.spans if s.name.startswith("chat ")]
    assert len(chats) == len(calls) == 6, "one chat span per model call the provider received"
    assert sorted(s.name for s in chats) == sorted(f"chat {r.model}" for r in calls)
    for chat in chats:
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] in {"openai", "anthropic"}
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert "error.type" not in chat.attributes
    debaters = [s for s in chats if "debate.seat" in s.attributes]
    assert len(debaters) == len([r for r in calls if not is_judge(r)]) == 4
    assert {s.parent_id for s in debaters} == {r.span_id for r in rounds.values()}
    assert {s.parent_id for s in chats if s not in debaters} == {p.span_id for p in passes.values()}

    shown = [text for span in collector.spans for text in strings_in(span)]
    assert not [text for text in shown if "event sourcing" in text], "no span carries the topic"


async def test_a_failed_call_is_a_chat_span_with_its_error_type(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv, OTLPCollector() as collector:
        srv.add_rule(Reply(status=401), match=lambda r: r.api == "anthropic", times=1)
        script_judge(srv, "A")
        env = traced_env(tmp_path, srv, OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
        code, _, err = await debate(tmp_path, "run", TOPIC, "--rounds", "1", env=env)
        assert code in (0, 1), err
        anthropic = [r for r in srv.requests if r.api == "anthropic"]
    chats = [s for s in collector.spans if s.name.startswith("chat ")]
    (failed,) = [s for s in chats if "error.type" in s.attributes]
    assert failed.attributes["error.type"] == "auth" and failed.status_code == 2
    assert failed.attributes["gen_ai.provider.name"] == "anthropic"
    assert failed.attributes["gen_ai.request.model"] == anthropic[0].model
    assert "gen_ai.usage.input_tokens" not in failed.attributes
    assert len(chats) == len(srv.requests)


async def test_without_an_endpoint_a_run_exports_nothing(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv, OTLPCollector() as collector:
        script_judge(srv, "A")
        env = traced_env(tmp_path, srv, OTEL_SERVICE_NAME="debates-ci")
        code, out, err = await debate(tmp_path, "run", TOPIC, "--rounds", "1", "--json", env=env)
        assert code == 0, err
        assert json.loads(out)["status"] == "completed" and len(srv.requests) == 4
    assert collector.requests == 0 and collector.spans == []


async def test_without_an_endpoint_the_hooks_load_no_opentelemetry(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in OTEL_VARS} | {"PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOOKS_OFF, cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert json.loads(out) == [], "tracing off imports no OpenTelemetry module"


async def test_a_worker_traces_the_debate_with_dbos_spans_and_a_front_its_slack_writes(tmp_path: Path) -> None:
    port, worker_port = free_port(), free_port()
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack, OTLPCollector() as collector:
        script_judge(llm, "A")
        env = {k: v for k, v in slack_env(tmp_path, llm, slack).items() if k not in OTEL_VARS}
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.url
        front = await serving(tmp_path, env, port, "--front-only")
        worker = await spawn(tmp_path, env, "worker", "--name", "w1", "--host", "127.0.0.1", "--port",
                             str(worker_port))
        try:
            await health_until(f"http://127.0.0.1:{worker_port}/healthz", worker, 200)
            await command(port, TOPIC, slack, "trigger-traced-1")
            await slack.wait_for(slack_verdict_posted, within=90)
        finally:
            worker_err = await stopped(worker)
            await stopped(front)  # each flushed its spans as it exited
        (row,) = rows(tmp_path / "debates.db")
    assert "logger provider" not in worker_err, "DBOS's logs stay on stderr, without a warning about OTLP"

    (root,) = collector.spans_named("debate")
    assert root.attributes["gen_ai.conversation.id"] == row["id"] and root.attributes["debate.platform"] == "slack"
    assert root.resource["service.name"] == "debate-bot-worker"
    in_trace = [s for s in collector.spans if s.trace_id == root.trace_id]
    dbos = [s for s in in_trace if "operationType" in s.attributes]  # DBOS's own spans (its legacy names)
    assert {s.attributes["operationType"] for s in dbos} >= {"workflow", "step"}
    assert any(s.span_id == root.parent_id for s in dbos), "the debate runs inside its DBOS workflow span"
    assert len([s for s in in_trace if s.name.startswith("chat ")]) == len(llm.requests)

    writes = [s for s in collector.spans if s.name.startswith("slack ")]
    assert {s.name for s in writes} >= {"slack chat.postMessage", "slack chat.update"}
    assert all(s.resource["service.name"] == "debate-bot-front" for s in writes)
    posted = [s for s in writes if s.attributes.get("gen_ai.conversation.id") == row["id"]]
    assert len(posted) >= len(slack.of("chat.update")), "a front's writes for the debate carry its id"
    assert all(s.attributes["http.response.status_code"] == 200 and s.attributes["debate.platform"] == "slack"
               for s in writes)
    shown = [text for span in collector.spans for text in strings_in(span)]
    assert not [text for text in shown if "event sourcing" in text], "no span carries the topic"


async def test_discord_writes_are_spans_with_their_routes_and_the_debate_id(tmp_path: Path) -> None:
    port = free_port()
    async with FakeLLMServer() as llm, DiscordPeer() as discord, OTLPCollector() as collector:
        script_judge(llm, "A")
        env = traced_env(tmp_path, llm, OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, DEBATE_ROUNDS="1",
                         DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=discord.api_base_url,
                         DISCORD_GATEWAY_URL=discord.gateway_url)
        proc = await spawn(tmp_path, env, "serve", "--discord", "--host", "127.0.0.1", "--port", str(port))
        try:
            await health_until(f"http://127.0.0.1:{port}/healthz", proc, 200)
            await discord.dispatch_interaction(discord.slash_command("debate", {"topic": TOPIC}))
            await discord.wait_for(lambda: discord_verdict_posted(discord), within=90)
        finally:
            await stopped(proc)
        (row,) = rows(tmp_path / "debates.db")
        (thread,) = discord.threads()
        in_thread = [c for c in discord.writes() if c.path.startswith(f"/channels/{thread['id']}/")]

    writes = [s for s in collector.spans if s.name.startswith("discord ")]
    routes = {s.attributes["debate.platform.method"] for s in writes}
    assert {"POST /channels/{id}/messages", "PATCH /channels/{id}/messages/{id}"} <= routes
    assert all(s.name == f"discord {s.attributes['debate.platform.method']}" for s in writes)
    assert all(str(s.attributes["http.response.status_code"]).startswith("2") for s in writes)
    for_debate = [s for s in writes if s.attributes.get("gen_ai.conversation.id") == row["id"]]
    assert len(for_debate) >= len(in_thread) > 0, "every write into the debate's thread (and its root) carries its id"
    assert not [t for s in collector.spans for t in strings_in(s) if TOKEN in t or "event sourcing" in t]


async def test_spans_carry_a_model_endpoint_as_scheme_host_and_path_and_no_prompt(tmp_path: Path) -> None:
    """Item 23 of issue 57: a *_BASE_URL's user info or query, and (in an SDK's content mode) the prompts,
    must not reach the collector, whoever made the span (here the anthropic SDK's own HTTP span)."""
    async with FakeLLMServer() as srv, OTLPCollector() as collector:
        script_judge(srv, "A")
        env = traced_env(tmp_path, srv, OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
                         ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE="content")
        env["ANTHROPIC_BASE_URL"] = srv.anthropic_base_url.replace("http://", "http://svc:pw-LEAKED-1@")
        code, _, err = await debate(tmp_path, "run", TOPIC, "--rounds", "1", env=env)
        assert code == 0, err
        assert any(r.api == "anthropic" for r in srv.requests)
        port = srv.anthropic_base_url.rsplit(":", 1)[1].strip("/")
    sdk = [s for s in collector.spans if "url.full" in s.attributes]
    assert sdk, "the anthropic SDK's HTTP spans were exported"
    assert {s.attributes["url.full"] for s in sdk} == {f"http://127.0.0.1:{port}/v1/messages"}
    assert all(s.attributes["url.path"] == "/v1/messages" and "url.query" not in s.attributes for s in sdk)
    shown = [text for span in collector.spans for text in strings_in(span)]
    assert not [text for text in shown if "LEAKED" in text or "svc:" in text or "event sourcing" in text]
    assert not [s for s in collector.spans if "gen_ai.input.messages" in s.attributes]


async def test_the_exporter_sends_no_user_info_query_or_fragment_of_any_url() -> None:
    """Whatever a library puts in a span's URL attributes, the collector gets scheme, host, port and path."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from orchestrator.tracing_export import SafeSpanExporter

    async with OTLPCollector() as collector:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(SafeSpanExporter(
            OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces"))))
        tracer = provider.get_tracer("tests")

        def emit() -> None:
            with tracer.start_as_current_span("POST", attributes={
                "url.full": "https://svc:pw-LEAKED-2@llm.example.com:8443/v1/chat/completions?api-key=LEAKED-3#x",
                "http.url": "http://[::1]:8000/v1/messages?key=LEAKED-4",
                "url.path": "/v1/chat/completions?api-key=LEAKED-5", "url.query": "api-key=LEAKED-6",
                "server.address": "svc:pw-LEAKED-7@llm.example.com", "gen_ai.request.model": "gpt-5",
            }):
                pass
            with tracer.start_as_current_span("plain", attributes={"debate.round": 1}):
                pass
            provider.shutdown()

        await asyncio.to_thread(emit)
    spans = {s.name: s for s in collector.spans}
    assert spans["POST"].attributes == {
        "url.full": "https://llm.example.com:8443/v1/chat/completions", "http.url": "http://[::1]:8000/v1/messages",
        "url.path": "/v1/chat/completions", "server.address": "llm.example.com", "gen_ai.request.model": "gpt-5"}
    assert spans["plain"].attributes == {"debate.round": 1}
