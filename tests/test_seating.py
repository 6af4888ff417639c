"""Seating the judges: never a debater's family while another is configured (and said when it must be);
a tie-break judge of a third family, or none."""

from __future__ import annotations

import itertools

import pytest

from bots.commands import build_spec, start_request
from orchestrator.config import Settings
from orchestrator.debate.seating import Seating, choose_seats
from orchestrator.providers import ProviderRegistry, family

KEYS = {"OPENAI_API_KEY": "sk-test-1", "ANTHROPIC_API_KEY": "sk-ant-test-2", "GEMINI_API_KEY": "gm-test-3"}
LOCAL = {"OLLAMA_BASE_URL": "http://127.0.0.1:9"}  # a fourth family (nothing is called here)


def seat(env: dict[str, str], **flags: object) -> Seating:
    settings = Settings(_env_file=None, **env)  # type: ignore[call-arg]
    return choose_seats(settings, ProviderRegistry(settings), format="challenge", **flags)  # type: ignore[arg-type]


def families(seating: Seating) -> set[str]:
    return {family(s.model) for s in seating.seats}


def test_the_default_judge_is_of_a_family_that_is_not_debating() -> None:
    seating = seat(KEYS)
    assert len(families(seating)) == 2
    assert family(seating.judge) not in families(seating)
    assert not any("same model family" in n for n in seating.notes)


@pytest.mark.parametrize("pair", list(itertools.permutations(
    ["openai:gpt-5", "anthropic:claude-sonnet-4-6", "gemini:gemini-2.5-pro", "openai:gpt-5-mini"], 2)))
def test_the_judge_never_shares_a_debaters_family_when_another_is_configured(pair: tuple[str, str]) -> None:
    for judge_setting in (None, pair[0], pair[1]):  # DEBATE_JUDGE of a debater's family gives way too
        env = KEYS | ({"DEBATE_JUDGE": judge_setting} if judge_setting else {})
        seating = seat(env, proposer=pair[0], challenger=pair[1])
        assert family(seating.judge) not in families(seating), (pair, judge_setting, seating.judge)


def test_a_debate_judge_setting_of_a_debaters_family_gives_way_with_a_note() -> None:
    seating = seat(KEYS | {"DEBATE_JUDGE": "openai:gpt-4o"}, proposer="openai:gpt-5",
                   challenger="anthropic:claude-sonnet-4-6")
    assert seating.judge.startswith("gemini:")
    assert any("DEBATE_JUDGE (openai:gpt-4o) is of the same model family as a debater" in n for n in seating.notes)


def test_with_no_other_family_the_judge_shares_one() -> None:
    seating = seat({"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "sk-2"})
    assert family(seating.judge) in families(seating)  # the judge's notice and the verdict say so (test_judge)
    assert seating.tiebreak_judge is None


def test_a_judge_named_for_the_debate_is_honoured_and_said() -> None:
    seating = seat(KEYS, proposer="openai:gpt-5", challenger="anthropic:claude-sonnet-4-6", judge="openai:gpt-4o")
    assert seating.judge == "openai:gpt-4o"
    assert any("same model family (OpenAI) as debater A, as named for this debate" in n for n in seating.notes)


def test_the_tiebreak_judge_is_of_a_third_family_or_none() -> None:
    three = seat(KEYS, proposer="openai:gpt-5", challenger="anthropic:claude-sonnet-4-6")
    assert three.judge.startswith("gemini:") and three.tiebreak_judge is None  # no family is left for it

    four = seat(KEYS | LOCAL, proposer="openai:gpt-5", challenger="anthropic:claude-sonnet-4-6")
    assert four.tiebreak_judge is not None
    taken = families(four) | {family(four.judge)}
    assert family(four.tiebreak_judge) not in taken

    one_family = seat(KEYS, proposer="openai:gpt-5", challenger="openai:gpt-5-mini")
    assert one_family.tiebreak_judge is not None
    assert family(one_family.tiebreak_judge) not in {"OpenAI", family(one_family.judge)}


def test_a_pinned_tiebreak_judge_is_used_only_when_it_is_of_a_third_family() -> None:
    pinned = seat(KEYS | LOCAL | {"DEBATE_TIEBREAK_JUDGE": "ollama:llama3.3"}, proposer="openai:gpt-5",
                  challenger="anthropic:claude-sonnet-4-6")
    assert pinned.tiebreak_judge == "ollama:llama3.3"

    wrong = seat(KEYS | {"DEBATE_TIEBREAK_JUDGE": "openai:gpt-4o"}, proposer="openai:gpt-5",
                 challenger="anthropic:claude-sonnet-4-6")
    assert wrong.tiebreak_judge is None
    assert any("DEBATE_TIEBREAK_JUDGE (openai:gpt-4o)" in n for n in wrong.notes)


def test_the_spec_carries_the_tiebreak_judge() -> None:
    settings = Settings(_env_file=None, **(KEYS | LOCAL))  # type: ignore[call-arg]
    command = start_request("Adopt a monorepo?", proposer="openai:gpt-5", challenger="anthropic:claude-sonnet-4-6")
    spec, _notes = build_spec(command, settings, ProviderRegistry(settings), policy=None, platform="cli")
    assert spec.tiebreak_judge is not None and family(spec.tiebreak_judge) not in {"OpenAI", "Anthropic", "Google"}
