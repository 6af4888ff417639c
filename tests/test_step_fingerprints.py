"""The replay rules a test enforces: every format's and a continuation's step sequence, as DBOS records
it for a scripted debate, is the one checked in for WORKFLOW_VERSION (orchestrator/durable/
step_fingerprints.json); no parallel branch takes more than LANE_SLOTS steps; and a reordered step is
caught. `DEBATE_WRITE_FINGERPRINTS=1` adds the current version's fingerprints instead (fingerprints.REGENERATE)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS

from orchestrator.debate.run import DebateRun
from orchestrator.durable import LANE_SLOTS, WORKFLOW_VERSION, WorkerHost
from orchestrator.durable import fingerprints as fp
from orchestrator.durable import steps as durable_steps
from orchestrator.durable.names import segment_workflow_id
from orchestrator.events import Notice
from orchestrator.models import DebateSpec
from tests.brief_sources import brief_of
from tests.council_scripts import TOPIC as COUNCIL_TOPIC
from tests.council_scripts import script_council
from tests.debate_harness import make_spec
from tests.durable_harness import (
    STANCE_TOPIC,
    DurableBackend,
    enqueued,
    enqueued_continuation,
    script_stances,
    stances_debater,
    worker_host,
)
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge

RETRY_MODELS = ("model-c", "model-d")  # the stances debate whose Debater A answers without JSON, twice
COUNCIL_MODELS = ("openai:member-a", "openai:member-b", "openai:member-c")
JURORS = ("openai:juror-one", "openai:juror-two", "openai:juror-three")  # two passes each, in parallel lanes
WRITE = os.environ.get("DEBATE_WRITE_FINGERPRINTS") == "1"


@pytest.fixture
def sqlite(system_db: Path) -> DurableBackend:
    return DurableBackend.sqlite(system_db)


class LaneCount:
    """How many steps each lane of every `gather` took (counted where Durable hands out a lane's ids)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.taken: dict[Any, int] = {}
        handout = durable_steps._Lane.next

        def counted(lane: Any) -> Any:
            self.taken[lane] = self.taken.get(lane, 0) + 1
            return handout(lane)

        monkeypatch.setattr(durable_steps._Lane, "next", counted)

    def widest(self) -> int:
        return max(self.taken.values(), default=0)


@pytest.fixture
async def host(llm_server: FakeLLMServer, tmp_path: Path, sqlite: DurableBackend) -> AsyncIterator[WorkerHost]:
    script_judge(llm_server, "A")
    async with worker_host(llm_server, sqlite.log(tmp_path), sqlite) as running:
        yield running


async def recorded_steps(debate_id: str, segment: int = 1) -> fp.Fingerprint:
    return fp.fingerprint(await DBOS.list_workflow_steps_async(segment_workflow_id(debate_id, segment)))


async def play(host: WorkerHost, spec: DebateSpec) -> fp.Fingerprint:
    outcome = await (await enqueued(host, spec)).get_result(polling_interval_sec=0.05)
    assert outcome["status"] == "completed", outcome
    return await recorded_steps(spec.id)


async def play_continuation(host: WorkerHost, spec: DebateSpec) -> fp.Fingerprint:
    await play(host, spec)
    segment = await host.store.begin_continuation(spec.id)
    outcome = await (await enqueued_continuation(host, spec.id, segment)).get_result(polling_interval_sec=0.05)
    assert outcome["status"] == "completed", outcome
    return await recorded_steps(spec.id, segment)


CITING_MODELS = ("cite-a", "cite-b")  # the challenge whose debaters cite the brief: each turn's check is a step


async def cited_spec() -> DebateSpec:
    """A one-round challenge with a brief, whose debaters each cite it (script_citations)."""
    brief = await brief_of(("plan.md", "# Plan\nHosting is 3k a month."))
    return make_spec("challenge", tuple(f"openai:{m}" for m in CITING_MODELS), rounds=1).model_copy(
        update={"brief": brief})


def script_citations(srv: FakeLLMServer) -> None:
    for model in CITING_MODELS:
        srv.add_rule(Reply(text='Per [S1 "Hosting is 3k a month"] it is cheap.'), lambda r, m=model: r.model == m)


def script_json_retry(srv: FakeLLMServer) -> None:
    """Debater A's opening is prose twice (the retry too): its lane takes the most steps a turn takes."""
    srv.add_rule(Reply(text="I would rather answer in prose."), stances_debater(RETRY_MODELS[0], 1), times=2)
    script_stances(srv, RETRY_MODELS)


async def scripted_debates(srv: FakeLLMServer, host: WorkerHost) -> dict[str, fp.Fingerprint]:
    """Every scenario's recorded steps: each format, a stances JSON retry, a jury, a continuation."""
    script_stances(srv)
    script_json_retry(srv)
    script_council(srv, COUNCIL_MODELS)
    script_citations(srv)
    retry_spec = make_spec("stances", tuple(f"openai:{m}" for m in RETRY_MODELS), topic=STANCE_TOPIC)
    return {
        "challenge": await play(host, make_spec("challenge")),
        "consensus": await play(host, make_spec("consensus")),
        "stances": await play(host, make_spec("stances", topic=STANCE_TOPIC)),
        "stances-json-retry": await play(host, retry_spec),
        "council": await play(host, make_spec("council", COUNCIL_MODELS, topic=COUNCIL_TOPIC)),
        "council-continuation": await play_continuation(host, make_spec("council", COUNCIL_MODELS,
                                                                        topic=COUNCIL_TOPIC)),
        "continuation": await play_continuation(host, make_spec("challenge", rounds=1)),
        "jury": await play(host, make_spec("challenge", rounds=1).model_copy(update={"judges": JURORS})),
        "challenge-cited": await play(host, await cited_spec()),  # each turn's step, then its citations' check
    }


@pytest.mark.slow
async def test_every_format_replays_the_step_sequence_checked_in_for_its_workflow_version(
    llm_server: FakeLLMServer, host: WorkerHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    lanes = LaneCount(monkeypatch)
    recorded = await scripted_debates(llm_server, host)
    if WRITE:
        fp.write(WORKFLOW_VERSION, recorded)
    assert (problem := fp.mismatch(WORKFLOW_VERSION, recorded)) is None, problem
    # the JSON retry's lane is the widest a turn takes: the call, the retried call (TurnStarted and the
    # notice between them deferred into them), the closing events deferred to the lane's last step
    assert lanes.widest() == 3 <= LANE_SLOTS
    retried = [line for line in recorded["stances-json-retry"] if "model_turn" in line]
    assert len(retried) == len([line for line in recorded["stances"] if "model_turn" in line]) + 1


@pytest.mark.slow
async def test_a_reordered_step_fails_the_comparison_and_says_to_bump_the_version(
    host: WorkerHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Challenge with a round's end delivered before its challenger's turn instead of after it."""
    turn, completed = DebateRun.turn, DebateRun.round_completed

    async def end_first(run: DebateRun, seat: Any, round: int, kind: str, *args: Any, **kwargs: Any) -> Any:
        if seat.role == "challenger":
            await completed(run, round, run.spec.rounds)
        return await turn(run, seat, round, kind, *args, **kwargs)

    async def already_ended(run: DebateRun, round: int, total: int) -> None:
        return None

    monkeypatch.setattr(DebateRun, "turn", end_first)
    monkeypatch.setattr(DebateRun, "round_completed", already_ended)
    reordered = await play(host, make_spec("challenge"))

    checked_in = fp.load()[WORKFLOW_VERSION]
    names = sorted(line.split()[1] for line in checked_in["challenge"])
    assert sorted(line.split()[1] for line in reordered) == names  # the same steps, one of them moved
    problem = fp.mismatch(WORKFLOW_VERSION, checked_in | {"challenge": reordered})
    assert problem is not None
    assert ("challenge: step 3 was `3 DebateRun.turn.<locals>.model_turn turn:1:B:challenge:end`, "
            "now `3 DebateRun.round_completed.<locals>.complete_round`") in problem
    assert "bump WORKFLOW_VERSION" in problem and fp.REGENERATE in problem
    assert fp.mismatch(WORKFLOW_VERSION, checked_in) is None


@pytest.mark.slow
async def test_a_budget_set_leaves_the_step_sequence_as_checked_in(
    llm_server: FakeLLMServer, tmp_path: Path, sqlite: DurableBackend
) -> None:
    """The after-round budget check is part of the round's last step whether or not a budget is set, so
    setting or unsetting one while debates are in flight never shifts the steps they replay."""
    script_judge(llm_server, "A")
    async with worker_host(llm_server, sqlite.log(tmp_path), sqlite,
                           env={"DEBATE_BUDGET_USD_PER_MONTH": "1000"}) as host:
        recorded = await play(host, make_spec("challenge"))
    assert recorded == fp.load()[WORKFLOW_VERSION]["challenge"]


def test_a_version_s_fingerprints_are_never_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "fingerprints.json"
    assert fp.mismatch("v1", {"challenge": ["1 a"]}, path) is not None  # nothing checked in: generate first
    fp.write("v1", {"challenge": ["1 a", "2 b"]}, path)
    fp.write("v1", {"challenge": ["1 a", "2 b"]}, path)  # the same again: nothing changes
    with pytest.raises(ValueError, match="bump WORKFLOW_VERSION"):
        fp.write("v1", {"challenge": ["1 b", "2 a"]}, path)
    assert "step 1 was `1 a`, now `1 b`" in (fp.mismatch("v1", {"challenge": ["1 b", "2 a"]}, path) or "")
    assert "2 steps checked in, 1 recorded" in (fp.mismatch("v1", {"challenge": ["1 a"]}, path) or "")
    fp.write("v2", {"challenge": ["1 b", "2 a"]}, path)  # a new version keeps the old one's entry
    assert json.loads(path.read_text()) == {"v1": {"challenge": ["1 a", "2 b"]}, "v2": {"challenge": ["1 b", "2 a"]}}
    assert fp.mismatch("v2", {"challenge": ["1 b", "2 a"]}, path) is None
    fp.write("v2", {"challenge": ["1 b", "2 a"], "council": ["1 c"]}, path)  # a new format's scenario is added
    assert json.loads(path.read_text())["v2"] == {"challenge": ["1 b", "2 a"], "council": ["1 c"]}
    with pytest.raises(ValueError, match="bump WORKFLOW_VERSION"):
        fp.write("v2", {"council": ["1 c"]}, path)  # but none is dropped


def test_two_seats_turns_swapped_under_one_step_name_are_told_apart() -> None:
    class Said:
        def __init__(self, key: str) -> None:
            self.event = Notice(debate_id="d", text=key)

    def steps(*keys: str) -> list[dict[str, Any]]:
        return [{"function_id": 3 + 8 * i, "function_name": "DebateRun.turn.<locals>.model_turn", "output": Said(k)}
                for i, k in enumerate(keys)] + [{"function_id": 1, "function_name": "EventBus.emit", "output": None}]

    a_then_b, b_then_a = fp.fingerprint(steps("A", "B")), fp.fingerprint(steps("B", "A"))
    assert a_then_b[0] == "1 EventBus.emit" and a_then_b[1].startswith("3 DebateRun.turn.<locals>.model_turn notice:")
    as_dbos_matches = [" ".join(line.split()[:2]) for line in a_then_b]  # ids and names: DBOS sees no change
    assert as_dbos_matches == [" ".join(line.split()[:2]) for line in b_then_a] and a_then_b != b_then_a
