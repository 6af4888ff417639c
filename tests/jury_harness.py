"""What test_jury.py shares with other test modules, moved here so that no test module imports another: `JURORS`,
`jury_env`, `jury_spec`, `picks`."""

from __future__ import annotations

from orchestrator.models import DebateSpec
from tests.debate_harness import make_spec
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import verdict_json

JURORS = ("gemini:juror-one", "anthropic:juror-two", "ollama:qwen-juror-three")


def jury_env(srv: FakeLLMServer) -> dict[str, str]:
    return {"GEMINI_API_KEY": "gm-test-secret-0123456789", "GEMINI_BASE_URL": srv.openai_base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-secret-0123456789", "ANTHROPIC_BASE_URL": srv.anthropic_base_url,
            "OLLAMA_BASE_URL": srv.openai_base_url}


def picks(srv: FakeLLMServer, model: str, side: str, *, reasoning: str = "") -> None:
    """Juror `model` picks `side` ("proposer" or "challenger") whichever order it is shown."""
    name = model.split(":", 1)[1]
    for first, letter in (("proposer", "A" if side == "proposer" else "B"),
                          ("challenger", "A" if side == "challenger" else "B")):
        text = verdict_json(letter, reasoning=reasoning or f"Debater {letter} carried round 1.",
                            recommendation=f"Follow the {side}.")
        srv.add_rule(Reply(text=text, latency_s=0.05),
                     lambda r, n=name, f=first: r.model == n and f"- Debater A: {f}" in r.prompt_text)


def jury_spec(*judges: str) -> DebateSpec:
    return make_spec("challenge", rounds=1).model_copy(update={"judges": judges or JURORS})
