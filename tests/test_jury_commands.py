"""Asking for a jury: `debate run … --judges` and `debate rematch … --judges` as real subprocesses,
DEBATE_JUDGES as the default, the 2–5 rule in every surface's grammar, `debate show` and `history`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from bots.commands import build_spec, parse_command
from bots.grammar import CommandError, Rematch, parse_team_command
from orchestrator.config import Settings
from orchestrator.providers import ProviderRegistry
from tests.cli_harness import debate
from tests.fakes.llm_server import FakeLLMServer
from tests.jury_commands_harness import jury_env
from tests.jury_harness import picks

JURY = "gemini:juror-one,ollama:qwen-juror-two,ollama:llama-juror-three"


@pytest.mark.slow
async def test_debate_run_and_rematch_take_a_jury(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        for juror in JURY.split(","):
            picks(srv, juror, "proposer")
        env = jury_env(tmp_path, srv)
        code, out, err = await debate(tmp_path, "run", "Should we rewrite ingest in Go?", "--rounds", "1",
                                      "--judges", JURY, "--json", env=env)
        assert code == 0, err
        first = json.loads(out)
        code, out, err = await debate(tmp_path, "rematch", first["id"], "--judges",
                                      "gemini:juror-one,ollama:qwen-juror-two", "--json", env=env)
        assert code == 0, err
        again = json.loads(out)
        code, shown, _ = await debate(tmp_path, "show", first["id"], env=env)
        code_h, history, _ = await debate(tmp_path, "history", env=env)
        code_b, _, bad = await debate(tmp_path, "run", "x", "--judges", "gemini:juror-one", env=env)
    assert first["spec"]["judges"] == JURY.split(",") and first["verdict"]["jury_tally"] == "Jury 3–0 for A"
    assert len(first["verdict"]["jury"]) == 3 and first["verdict"]["jury_agreement"] == 1.0
    assert again["spec"]["judges"] == ["gemini:juror-one", "ollama:qwen-juror-two"]
    assert again["verdict"]["jury_tally"] == "Jury 2–0 for A"
    assert code == 0 and "Jury 3–0 for A: high confidence — unanimous." in shown and "Juror 3 · ollama:" in shown
    assert code_h == 0 and "Juries: 2 · split 0 (0%)" in history
    assert code_b == 2 and "A jury takes 2 to 5 judges" in bad


def settings(**env: str) -> Settings:
    return Settings(_env_file=None, OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY="sk-ant-test",  # type: ignore[call-arg]
                    GEMINI_API_KEY="gm-test", **env)


def test_debate_judges_is_the_default_jury_and_a_same_family_juror_gives_way() -> None:
    chosen = settings(DEBATE_JUDGES="openai:gpt-5-mini,gemini:gemini-2.5-flash",
                      DEBATE_PROPOSER="openai:gpt-5", DEBATE_CHALLENGER="anthropic:claude-sonnet-4-6")
    command = parse_command("Should we adopt Rust?")
    spec, notes = build_spec(command, chosen, ProviderRegistry(chosen), policy=None, platform="cli")
    # the OpenAI juror shares the proposer's family while Gemini's default model does not
    assert spec.judges == ("gemini:gemini-2.5-pro", "gemini:gemini-2.5-flash")
    assert any("Juror 1 (openai:gpt-5-mini) is of the same model family as a debater" in n for n in notes)
    named = parse_command("Should we adopt Rust? --judges gemini:a,gemini:b,gemini:c")
    spec, _ = build_spec(named, chosen, ProviderRegistry(chosen), policy=None, platform="cli")
    assert spec.judges == ("gemini:a", "gemini:b", "gemini:c") and spec.tiebreak_judge is None


@pytest.mark.parametrize("text", ["Rust? --judges gemini:a", "Rust? --judges a:1,b:2,c:3,d:4,e:5,f:6"])
def test_a_jury_of_the_wrong_size_is_refused_in_one_sentence(text: str) -> None:
    with pytest.raises(CommandError, match=r"^A jury takes 2 to 5 judges, separated by commas"):
        parse_command(text)
    with pytest.raises(ValidationError, match="2 to 5 comma-separated provider:model judges"):
        settings(DEBATE_JUDGES="gemini:a")


def test_slack_rematch_takes_judges() -> None:
    command = parse_team_command("rematch 3f2a9c01d4 --judges gemini:a,gemini:b")
    assert isinstance(command, Rematch) and command.judges == "gemini:a,gemini:b"
