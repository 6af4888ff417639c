"""The `local:` provider's rules that need no model (its spec, its schema bounds, who may seat it), and what
issue 52 and issue 57 item 14 changed for every OpenAI-compatible host, through the loopback peer:
`json_schema` sent to vLLM and Ollama and dropped for good when a host refuses it, a turn the model ended at
its token limit shown as cut, the one-line error when nothing is configured, and a small context folding
the earlier round into a summary a round sooner. The real model is in tests/test_real_model.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.config import Settings
from orchestrator.debate.seating import NoProviderConfigured
from orchestrator.debate.verdict_answer import verdict_schema
from orchestrator.events import VerdictReached
from orchestrator.policy import ChatPolicy
from orchestrator.providers import ProviderRegistry, ProviderSpec, configured_providers, family, provider_spec, register
from orchestrator.providers.base import AnswerSchema, Message, ModelCall, ModelStringError
from orchestrator.providers.local_model import CHARS_PER_ANSWER_TOKEN, _free_strings, bounded_schema, string_bound
from orchestrator.providers.openai_compat import OpenAICompatProvider
from orchestrator.providers.registry import unregister_provider
from orchestrator.providers.vendors.openai import openai_backend
from tests.debate_harness import make_spec, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge, verdict_json

SCHEMA = AnswerSchema(name="verdict", json_schema={
    "type": "object", "properties": {"winner": {"type": "string", "enum": ["A", "B"]},
                                     "recommendation": {"type": "string"},
                                     "evidence": {"type": "array", "items": {"type": "string"}}},
    "required": ["winner", "recommendation", "evidence"], "additionalProperties": False})


def structured_call(model: str = "qwen3") -> ModelCall:
    return ModelCall(model=model, messages=(Message(role="user", content="Who won?"),), answer_schema=SCHEMA)


def test_the_local_spec_is_free_named_by_its_model_and_never_a_default() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    spec = provider_spec("local")
    assert spec.price("smollm2-135m").input_per_mtok == 0 and spec.json_schema
    assert family("local:smollm2-135m") == "Hugging Face"
    assert family("local:/models/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf") == "Qwen"
    assert family("local:/models/my-own.gguf") == "Local (llama.cpp)"
    assert "local" not in configured_providers(settings)  # never seated unless named
    with pytest.raises(ModelStringError, match=r"local:smollm2-135m or local:/path/to/model\.gguf"):
        ProviderRegistry(settings).check("local:gpt-7")
    with pytest.raises(ModelStringError, match="no GGUF file"):
        ProviderRegistry(settings).check("local:/nowhere/model.gguf")


def test_chat_gets_a_local_model_only_when_the_operator_lists_it() -> None:
    open_policy = ChatPolicy(Settings(_env_file=None), ProviderRegistry(Settings(_env_file=None)))  # type: ignore[call-arg]
    assert not open_policy.allows("local:smollm2-135m")
    listed = Settings(_env_file=None, DEBATE_CHAT_MODELS="local:smollm2-135m")  # type: ignore[call-arg]
    policy = ChatPolicy(listed, ProviderRegistry(listed))
    assert policy.allows("local:smollm2-135m") and not policy.allows("local:/etc/hostname")


def test_a_structured_answer_is_bounded_for_the_grammar() -> None:
    bounded = bounded_schema(SCHEMA.json_schema, non_empty=("recommendation",))
    assert bounded["properties"]["winner"] == {"type": "string", "enum": ["A", "B"]}  # an enum stays as it is
    assert bounded["properties"]["recommendation"]["minLength"] >= 1  # never an empty recommendation
    assert "minLength" not in bounded["properties"]["evidence"]["items"]  # what may be empty stays so
    assert bounded["properties"]["recommendation"]["maxLength"] <= 300
    assert bounded["properties"]["evidence"]["maxItems"] <= 3
    assert bounded["required"] == SCHEMA.json_schema["required"]
    verdict = verdict_schema(["A", "B"]).json_schema  # every string at its longest still fits the call's budget
    strings, _ = _free_strings(verdict)
    assert strings * string_bound(verdict, 512) / CHARS_PER_ANSWER_TOKEN < 512


def test_no_provider_is_one_line_naming_the_variables_and_local() -> None:
    line = str(NoProviderConfigured())
    assert "\n" not in line
    for needed in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OLLAMA_BASE_URL", "local:smollm2-135m"):
        assert needed in line


@pytest.mark.parametrize("preset", ["vllm", "ollama"])
async def test_compatible_hosts_get_json_schema(llm_server: FakeLLMServer, preset: str) -> None:
    provider = OpenAICompatProvider(provider_spec(preset), api_key="k", base_url=llm_server.openai_base_url,
                                    max_retries=0)
    llm_server.add_rule(Reply(text='{"winner": "B", "recommendation": "Ship it.", "evidence": []}'))
    try:
        completion = await provider.complete(structured_call())
    finally:
        await provider.aclose()
    sent = llm_server.requests[0].body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == SCHEMA.json_schema
    assert '"winner"' in completion.text


async def test_a_host_that_refuses_json_schema_is_asked_again_without_it_and_not_asked_with_it_again(
    llm_server: FakeLLMServer,
) -> None:
    llm_server.structured_output = False  # answers a response_format with 400, as servers without the mode do
    provider = OpenAICompatProvider(provider_spec("vllm"), api_key="k", base_url=llm_server.openai_base_url,
                                    max_retries=0)
    llm_server.add_rule(Reply(text="Winner: B\nRecommendation: Ship it."))
    try:
        first = await provider.complete(structured_call())
        second = await provider.complete(structured_call())
    finally:
        await provider.aclose()
    statuses = [(r.status, "response_format" in r.body) for r in llm_server.requests]
    assert statuses == [(400, True), (200, False), (200, False)]
    assert first.text == second.text == "Winner: B\nRecommendation: Ship it."


async def test_a_turn_the_model_ended_at_its_token_limit_is_shown_cut(llm_server: FakeLLMServer) -> None:
    script_judge(llm_server, "A")
    llm_server.add_rule(Reply(text="Monorepos scale because", finish_reason="length"), "You open the debate")
    result = await run_debate(llm_server, make_spec("challenge", rounds=1))
    opening = result.turns[0]
    assert opening.status == "ok"
    assert opening.text.startswith("Monorepos scale because")
    assert "[cut: the model reached its" in opening.text  # stored and shown as cut, not as a whole answer


@pytest.fixture
def tiny_context() -> object:
    """A provider like openai on the peer whose model has a small known context (as a local model's slot)."""
    spec = ProviderSpec(name="tinyctx", family="Tiny", factory=lambda s: openai_backend().from_settings(spec, s),
                        endpoint=provider_spec("openai").endpoint, budgets={"medium": 200},
                        context_window=lambda _settings, _model: 1500)
    register(spec)
    yield spec
    unregister_provider("tinyctx")


async def test_a_small_context_gets_the_summary_a_round_sooner(llm_server: FakeLLMServer, tiny_context: object,
                                                               tmp_path: Path) -> None:
    script_judge(llm_server, "A")
    long_turn = "A point with its evidence, at length. " * 60  # ~2,300 characters a turn
    llm_server.add_rule(Reply(text="Round 1 in short: A proposed, B objected."), "Summarise the debate so far")
    llm_server.default = Reply(text=long_turn)
    spec = make_spec("challenge", ("tinyctx:model-a", "tinyctx:model-b"), rounds=2)
    result = await run_debate(llm_server, spec)
    assert result.outcome.status == "completed"
    summaries = [r for r in llm_server.requests if "Round 1 in short" in "".join(
        m["content"] for m in r.messages)]
    assert summaries, "round 2's prompts carry the summary of round 1, not its whole text"
    round_two = [r for r in llm_server.requests if r.model in ("model-a", "model-b")][2:]
    assert all(r.prompt_text.count("A point with its evidence") < 100 for r in round_two)


async def test_a_schema_answer_with_empty_strings_is_unusable_and_asked_once_more(llm_server: FakeLLMServer) -> None:
    """What SmolLM2 did through vLLM's grammar: every field present, every string empty. Each pass asks again
    once (the local provider's schema bounds also ask llama.cpp's grammar for non-empty strings)."""
    from tests.judge_harness import judging, script_debaters

    script_debaters(llm_server)
    empty = json.dumps({"evidence": [], "winner": "", "reasoning": "", "recommendation": ""})
    llm_server.add_rule(Reply(text=empty), judging, times=2)
    llm_server.add_rule(Reply(text=verdict_json("B")), judging)
    spec = make_spec("challenge", rounds=1, judge="vllm:judge")
    result = await run_debate(llm_server, spec, env={"VLLM_BASE_URL": llm_server.openai_base_url})

    calls = [r for r in llm_server.requests if judging(r)]
    assert len(calls) == 4 and all("response_format" in r.body for r in calls)  # two passes, each asked twice
    (reached,) = result.of(VerdictReached)
    assert reached.verdict.recommendation.strip()
