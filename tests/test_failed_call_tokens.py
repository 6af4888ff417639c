"""A model call that fails after streaming text is paid for, so it is counted (issue 57 item 2): the real
engine through the real SDKs against the LLM peer, its events in the log on both backends. Its tokens
(estimated from what it streamed, marked so, when the server reported none) are in the failed turn or
the `model_calls` row, in the outcome's totals, in what the budgets count, and in the metrics."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from orchestrator.budgets import SpendWatch
from orchestrator.debate.engine import Engine
from orchestrator.events import EventBus, TurnFailed
from orchestrator.log import StoreSink
from orchestrator.metrics import model_labels
from orchestrator.providers import ProviderRegistry
from orchestrator.quotas import Budget
from tests.debate_harness import CollectingSink, make_spec, model_and, settings_for
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import is_judge, script_judge, verdict_json
from tests.log_backends import LogBackend

STREAMED = " ".join(f"point{i}" for i in range(400))  # ~2,800 characters
FIRST_ROUND, LATER_ROUND = "The proposer opened with:", "The proposer's latest response:"  # the challenger's prompts
CUT_AT = 1200  # the peer closes the stream after this many characters, unfinished


def output_tokens_metric(model: str) -> float:
    provider, label, operation = model_labels(model)
    return REGISTRY.get_sample_value("gen_ai_client_token_usage_sum", {
        "gen_ai_provider_name": provider, "gen_ai_request_model": label, "gen_ai_operation_name": operation,
        "gen_ai_token_type": "output"}) or 0.0


@pytest.mark.parametrize("who", ["debater", "judge"])
async def test_a_call_cut_after_streaming_counts_its_tokens_everywhere(
    llm_server: FakeLLMServer, log_backend: LogBackend, who: str
) -> None:
    srv = llm_server
    if who == "debater":  # the challenger's round-2 call streams, then the connection drops
        srv.add_rule(Reply(text=STREAMED, cut_after_chars=CUT_AT), model_and("model-b", LATER_ROUND), times=1)
    else:  # the judge's first pass streams its JSON answer, then the connection drops; the second answers
        answer = verdict_json("A", reasoning=STREAMED)
        srv.add_rule(Reply(text=answer, cut_after_chars=CUT_AT), is_judge, times=1)
    script_judge(srv, "A")
    spec = make_spec("challenge", rounds=2)
    failed_model = "openai:model-b" if who == "debater" else spec.judge
    settings = settings_for(srv)
    registry, sink = ProviderRegistry(settings), CollectingSink()
    before = output_tokens_metric(failed_model)
    async with log_backend.open(runner="serve:a") as store:
        try:
            engine = Engine(registry, settings, spend=SpendWatch(store, Budget(per_month=1000.0)))
            outcome = await engine.run(spec, EventBus([sink], log=StoreSink(store)))
        finally:
            await registry.aclose()
        estimated = [c for c in await store.spent_calls(0) if c.debate_id == spec.id and c.tokens_estimated]
        record = await store.get_debate(spec.id)

    expected = -(-CUT_AT // 4)  # what it streamed, at about four characters a token (the peer's chunks may end past it)
    (call,) = estimated
    assert call.model == failed_model and expected <= call.output_tokens < expected + 40, call
    assert call.input_tokens > 0 and call.counted_usd > 0, "a budget counts it"
    if who == "debater":
        (failed,) = [e.turn for e in sink.events if isinstance(e, TurnFailed)]
        assert failed.output_tokens == call.output_tokens and failed.tokens_estimated
        assert record is not None
        (stored,) = [t for t in record.turns if t.status == "failed"]
        assert stored.output_tokens == call.output_tokens and stored.tokens_estimated and stored.cost_usd is None
    assert outcome.output_tokens >= sum(r.output_tokens for r in [call]), "the outcome's totals include it"
    assert output_tokens_metric(failed_model) - before >= call.output_tokens, "the metrics count it"


async def test_a_call_that_times_out_while_streaming_counts_what_it_streamed(
    llm_server: FakeLLMServer, log_backend: LogBackend
) -> None:
    """The review's case: a challenger streams, then reaches the call limit; its turn is failed and its
    tokens are counted. (The peer streams 10,000 words, none repeating (a loop is cut sooner: repeats.py), at
    200 a second: the limit of 2 s ends it.)"""
    srv = llm_server
    words = " ".join(f"point{n}" for n in range(10_000))
    srv.add_rule(Reply(text=words, tokens_per_s=200), model_and("model-b", FIRST_ROUND))
    script_judge(srv, "A")
    spec = make_spec("challenge", rounds=1)
    settings = settings_for(srv, timeout=2.0)
    registry, sink = ProviderRegistry(settings), CollectingSink()
    async with log_backend.open(runner="serve:a") as store:
        try:
            outcome = await Engine(registry, settings).run(spec, EventBus([sink], log=StoreSink(store)))
        finally:
            await registry.aclose()
        calls = [c for c in await store.spent_calls(0) if c.debate_id == spec.id and c.model == "openai:model-b"]
    (failed,) = [e.turn for e in sink.events if isinstance(e, TurnFailed)]
    assert "timed out" in (failed.error or "") and failed.output_tokens > 0 and failed.tokens_estimated
    (call,) = calls
    assert call.output_tokens == failed.output_tokens and call.tokens_estimated
    assert outcome.output_tokens >= failed.output_tokens
