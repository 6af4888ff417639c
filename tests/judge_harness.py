"""What test_judge.py shares with other test modules, moved here so that no test module imports another: `PROMPT`,
`challenger_first`, `judging`, `proposer_first`, `script_debaters`."""

from __future__ import annotations

from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord

PROMPT = "Decide who made the stronger case"


def judging(r: RequestRecord) -> bool:
    return r.model == "judge" and PROMPT in r.prompt_text


def proposer_first(r: RequestRecord) -> bool:
    return judging(r) and "- Debater A: proposer" in r.prompt_text


def challenger_first(r: RequestRecord) -> bool:
    return judging(r) and "- Debater A: challenger" in r.prompt_text


def script_debaters(srv: FakeLLMServer) -> None:
    srv.add_rule(Reply(text="PROPOSER: adopt it; the benchmark shows 2x."), lambda r: r.model == "model-a")
    srv.add_rule(Reply(text="CHALLENGER: the benchmark is synthetic."), lambda r: r.model == "model-b")
