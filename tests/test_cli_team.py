"""The team in the loop from the command line: `debate run --interactive`, `debate continue`, `debate rematch`.
Real subprocesses, the real SDKs against the loopback LLM peer, a real SQLite log."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest

from tests.cli_harness import debate, two_providers
from tests.cli_team_harness import debate_with_stdin
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import is_judge, script_judge, verdict_json

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

NOTE = "Our staging cluster already runs Go 1.22 for the billing service."
FACTS = "New fact: the ingest team has two Go developers since May."


def debaters(srv: FakeLLMServer) -> list[RequestRecord]:
    return [r for r in srv.requests if not is_judge(r)]


async def show(tmp_path: Path, debate_id: str, env: dict[str, str]) -> dict:
    code, out, err = await debate(tmp_path, "show", debate_id, "--json", env=env)
    assert code == 0, err
    return json.loads(out)


async def test_run_interactive_takes_a_note_from_stdin_into_round_two(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        env = two_providers(tmp_path, srv)
        code, out, err = await debate_with_stdin(tmp_path, NOTE + "\n\n", "run", "Should we rewrite ingest in Go?",
                                                 "--interactive", "--json", env=env)
        assert code == 0, err
        requests = debaters(srv)
    assert "Audience note for round 2 (empty line to go on):" in err
    assert "Audience note for round 1" not in err, "nothing to react to before the first round"
    assert len(requests) == 4
    round_one, round_two = requests[:2], requests[2:]
    assert all(NOTE not in r.prompt_text for r in round_one)
    assert all(NOTE in r.last_user and "<audience_note " in r.last_user for r in round_two)
    data = json.loads(out)
    (note,) = data["interjections"]
    assert note["text"] == NOTE and note["round"] == 2 and note["author"] == getpass.getuser()
    assert note["platform"] == "cli" and note["kind"] == "interjection"


async def test_run_interactive_with_no_input_runs_on(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        code, out, err = await debate_with_stdin(tmp_path, "", "run", "Tabs or spaces?", "--rounds", "3",
                                                 "--interactive", "--json", env=two_providers(tmp_path, srv))
    assert code == 0, err
    assert err.count("Audience note for round") == 1, "end of input: not asked again"
    assert json.loads(out)["interjections"] == []


async def test_continue_gives_the_debate_a_second_verdict(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        for letter, swapped in (("A", True), ("B", False)):  # seat B in both order-swapped passes
            srv.add_rule(Reply(text=verdict_json(letter, changed=True, change_note="The staffing fact settles it.")),
                         match=lambda r, s=swapped: is_judge(r) and "was judged before" in r.prompt_text
                         and s == ("- Debater A: challenger" in r.prompt_text))
        script_judge(srv, "A", recommendation="Keep ingest in Python for now.")
        env = two_providers(tmp_path, srv)
        code, out, err = await debate(tmp_path, "run", "Should we rewrite ingest in Go?", "--rounds", "1", "--json",
                                      env=env)
        assert code == 0, err
        debate_id = json.loads(out)["id"]
        srv.requests.clear()

        code, out, err = await debate(tmp_path, "continue", debate_id, FACTS, "--json", env=env)
        assert code == 0, err
        continued = debaters(srv)
    assert len(continued) == 2
    assert all(FACTS in r.last_user and "Keep ingest in Python for now." in r.last_user for r in continued)
    data = await show(tmp_path, debate_id, env)
    assert data == json.loads(out)
    assert [v["number"] for v in data["verdicts"]] == [1, 2]
    first, second = data["verdicts"]
    assert first["winner_label"] == "A" and first["changed"] is None
    assert second["winner_label"] == "B" and second["changed"] is True
    assert second["change_note"] == "The staffing fact settles it."
    assert data["verdict"]["winner_label"] == "B", "the latest verdict is the debate's verdict"
    (facts,) = data["interjections"]
    assert facts["kind"] == "facts" and facts["round"] == 2 and facts["text"] == FACTS
    assert data["status"] == "completed" and data["rounds_completed"] == 2 and data["segment"] == 2
    assert [t["kind"] for t in data["turns"]][-2:] == ["continuation", "continuation"]

    code, out, _ = await debate(tmp_path, "show", debate_id, env=env)
    assert code == 0 and "Verdict 2 of 2" in out and "Changed: The staffing fact settles it." in out


async def test_continue_refusals_exit_2_with_one_line(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        env = two_providers(tmp_path, srv)
        code, _, err = await debate(tmp_path, "continue", "ffffffff", env=env)
        assert code == 2 and "no debate" in err and len(err.strip().splitlines()) == 1

        srv.add_rule(Reply(status=500), match="model-that-fails")
        code, out, err = await debate(tmp_path, "run", "Tabs or spaces?", "--rounds", "1", "--json",
                                      "--proposer", "openai:model-that-fails", env=env)
        assert code == 1, err
        failed_id = json.loads(out)["id"]
        code, _, err = await debate(tmp_path, "continue", failed_id, env=env)
        assert code == 2 and "only a completed debate" in err and len(err.strip().splitlines()) == 1

        code, out, err = await debate(tmp_path, "run", "Tabs or spaces?", "--rounds", "1", "--json", env=env)
        debate_id = json.loads(out)["id"]
        for _ in range(3):
            code, _, err = await debate(tmp_path, "continue", debate_id, env=env)
            assert code == 0, err
        code, _, err = await debate(tmp_path, "continue", debate_id, env=env)
    assert code == 2 and "continued 3 times" in err and len(err.strip().splitlines()) == 1
    assert len((await show(tmp_path, debate_id, env))["verdicts"]) == 4


async def test_rematch_creates_a_linked_debate_in_another_format(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        env = two_providers(tmp_path, srv)
        code, out, err = await debate(tmp_path, "run", "Should we rewrite ingest in Go?", "--rounds", "1", "--json",
                                      env=env)
        assert code == 0, err
        original = json.loads(out)
        code, out, err = await debate(tmp_path, "rematch", original["id"][:6], "--format", "consensus", "--json",
                                      env=env)
        assert code == 0, err
        again = json.loads(out)
        code, _, err = await debate(tmp_path, "rematch", "ffffffff", env=env)
        assert code == 2 and "no debate" in err
    assert again["id"] != original["id"] and again["rematch_of"] == original["id"]
    assert again["topic"] == original["topic"] and again["format"] == "consensus"
    assert again["spec"]["judge"] == original["spec"]["judge"]
    assert [s["model"] for s in again["spec"]["seats"]] == [s["model"] for s in original["spec"]["seats"]]
    linked = await show(tmp_path, original["id"], env)
    (rematch,) = linked["rematches"]
    assert rematch["id"] == again["id"] and rematch["format"] == "consensus" and rematch["status"] == "completed"
    # the scripted judge names letter A whichever debater is shown first: its passes split, No clear winner
    assert rematch["winner"] is None
    code, text, _ = await debate(tmp_path, "show", original["id"], env=env)
    assert code == 0 and "Rematches" in text and again["id"] in text
