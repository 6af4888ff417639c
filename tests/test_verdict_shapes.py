"""One call per judgement: structured-output modes where a provider has one (OpenAI and Gemini
`json_schema` strict, Anthropic a forced tool), and a reader that takes the shapes real models give
where none exists (here an Ollama endpoint that refuses `json_schema`: asked once with it, then without)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from orchestrator.events import VerdictReached
from tests.debate_harness import make_spec, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.judge_harness import challenger_first, judging, proposer_first, script_debaters

REC = "Run a production-shaped benchmark before adopting it."
EVIDENCE = "Round 1, Debater {w}: \"the benchmark is synthetic\" — never answered"


def _body(w: str) -> dict[str, object]:
    return {"evidence": [EVIDENCE.format(w=w)], "winner": w, "reasoning": f"Debater {w} showed the flaw.",
            "recommendation": REC}


def _winner_first(w: str) -> str:
    body = _body(w)
    return "```json\n" + json.dumps({"winner": w, **{k: v for k, v in body.items() if k != "winner"}}) + "\n```"


# Twelve shapes of one and the same verdict ("the challenger wins", shown as letter `w`), as real models write them.
SHAPES: dict[str, Callable[[str], str]] = {
    "fenced, evidence first": lambda w: "```json\n" + json.dumps(_body(w)) + "\n```",
    "winner before evidence": _winner_first,
    "evidence as one string": lambda w: json.dumps({**_body(w), "evidence": EVIDENCE.format(w=w)}),
    "trailing comma": lambda w: "```json\n" + json.dumps(_body(w), indent=1)[:-2] + ",\n}\n```",
    "nested under verdict": lambda w: json.dumps({"verdict": _body(w)}),
    "bare JSON in prose": lambda w: f"After weighing it all: {json.dumps(_body(w))} That is my call.",
    "winner as 'Debater X'": lambda w: json.dumps({**_body(w), "winner": f"Debater {w}"}),
    "capitalised, spaced keys": lambda w: json.dumps({"Evidence": [EVIDENCE.format(w=w)], "Winner": w.lower(),
                                                       "Reasoning": "It showed the flaw.", "Recommendation": REC}),
    "single-quoted dict": lambda w: "```python\n" + repr(_body(w)) + "\n```",
    "recommendation as a list": lambda w: json.dumps({**_body(w), "recommendation": REC.split(" before ")}),
    "comments and curly quotes": lambda w: ("```json\n{\n  // the decisive point\n  “evidence”: [“x”],\n"
                                            f"  “winner”: “{w}”,\n  “recommendation”: “{REC}”\n}}\n```"),
    "markdown lines, no JSON": lambda w: f"**Winner:** Debater {w}\n**Reasoning:** It showed the flaw.\n"
                                         f"**Recommendation:** {REC}",
}


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_every_shape_of_one_verdict_is_read_in_one_call(llm_server: FakeLLMServer, shape: str) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text=SHAPES[shape]("B")), proposer_first)  # the challenger is B here …
    srv.add_rule(Reply(text=SHAPES[shape]("A")), challenger_first)  # … and A when shown first
    env = {"OLLAMA_BASE_URL": srv.openai_base_url}
    srv.structured_output = False  # an Ollama (or vLLM, llama.cpp) build with no structured-output mode

    result = await run_debate(srv, make_spec("challenge", rounds=1, judge="ollama:judge"), env=env)

    refused = [r for r in srv.requests if judging(r) and r.status == 400]
    calls = [r for r in srv.requests if judging(r) and r.status == 200]
    # asked with the schema once per pass at most (the two passes run at once) …
    assert 1 <= len(refused) <= 2 and all("response_format" in r.body for r in refused)
    assert len(calls) == 2, "one call per pass, no retry"
    assert all("response_format" not in r.body for r in calls)  # … then read as free text, not asked again
    (event,) = result.of(VerdictReached)
    verdict = event.verdict
    assert verdict.winner == "B" and verdict.confidence == "high" and not verdict.split
    assert verdict.recommendation.startswith("Run a production-shaped benchmark")


def _strict(record: RequestRecord) -> dict:
    fmt = record.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    return fmt["json_schema"]["schema"]


@pytest.mark.parametrize("judge", ["openai:judge", "gemini:judge"])
async def test_json_schema_strict_gives_evidence_before_winner_in_one_call(llm_server: FakeLLMServer,
                                                                        judge: str) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text=_winner_first("B")), proposer_first)
    srv.add_rule(Reply(text=_winner_first("A")), challenger_first)
    env = {"GEMINI_API_KEY": "gm-test-secret-0123456789", "GEMINI_BASE_URL": srv.openai_base_url}

    result = await run_debate(srv, make_spec("challenge", rounds=1, judge=judge), env=env)

    calls = [r for r in srv.requests if judging(r)]
    assert len(calls) == 2 and all(len(r.messages) == 2 for r in calls)
    for record in calls:
        schema = _strict(record)
        keys = list(schema["properties"])
        assert keys.index("evidence") < keys.index("winner") and schema["properties"]["winner"]["enum"] == ["A", "B"]
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.winner == "B" and verdict.evidence and verdict.confidence == "high"


async def test_anthropic_judge_answers_through_a_forced_tool(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    script_debaters(srv)
    srv.add_rule(Reply(text=_winner_first("B")), proposer_first)
    srv.add_rule(Reply(text=_winner_first("A")), challenger_first)
    env = {"ANTHROPIC_API_KEY": "sk-ant-test-secret-0123456789", "ANTHROPIC_BASE_URL": srv.anthropic_base_url}

    result = await run_debate(srv, make_spec("challenge", rounds=1, judge="anthropic:judge"), env=env)

    calls = [r for r in srv.requests if judging(r)]
    assert len(calls) == 2 and all(r.api == "anthropic" for r in calls)
    for record in calls:
        (tool,) = record.body["tools"]
        assert record.body["tool_choice"] == {"type": "tool", "name": tool["name"]}
        assert tool["input_schema"]["properties"]["winner"]["enum"] == ["A", "B"]
    verdict = result.of(VerdictReached)[0].verdict
    assert verdict.winner == "B" and verdict.recommendation == REC


async def test_the_peer_refuses_a_schema_strict_mode_cannot_take(llm_server: FakeLLMServer) -> None:
    from openai import AsyncOpenAI, BadRequestError

    client = AsyncOpenAI(base_url=llm_server.openai_base_url, api_key="sk-test", max_retries=0)
    loose = {"type": "object", "properties": {"winner": {"type": "string"}}}
    with pytest.raises(BadRequestError, match="additionalProperties"):
        await client.chat.completions.create(
            model="judge", messages=[{"role": "user", "content": "x"}],
            response_format={"type": "json_schema", "json_schema": {"name": "v", "strict": True, "schema": loose}})
    await client.close()
