"""Every format stops after the round in which a budget is spent (issue 20), run by the real engine through
the real SDKs against the LLM peer, its events in a real SQLite log: the verdict covers the rounds played,
a notice says which budget stopped it, and the calls that are not debaters' turns (the consensus
question, the stances split, the judge, the council's chair) are in the log with their cost."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from orchestrator.budgets import SpendWatch
from orchestrator.debate.engine import Engine
from orchestrator.events import EventBus, Notice, RoundStarted, VerdictReached
from orchestrator.log import Store, StoreSink
from orchestrator.models import DebateSpec, Outcome, Seat, Turn
from orchestrator.providers import ProviderRegistry
from orchestrator.quotas import Budget, Quota
from tests.council_scripts import CHAIR, is_ranking, script_council
from tests.council_scripts import MODELS as COUNCIL_MODELS
from tests.council_scripts import TOPIC as COUNCIL_TOPIC
from tests.debate_harness import CollectingSink, make_spec, settings_for
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.format_stances_harness import MODELS, STANCES, TOPIC, debater, envelope, script_split
from tests.format_stances_harness import script_judge as script_stances_judge
from tests.judge_harness import script_debaters
from tests.jury_harness import JURORS, jury_env, jury_spec, picks
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend

MONTH = Budget(per_month=5.0)


async def spend_the_month(store: Store) -> None:
    """Another debate (the operator's, say) has spent $6 of the month's $5 at gpt-5's price."""
    theirs = DebateSpec(topic="Cost check", judge="openai:gpt-5", seats=(
        Seat(label="A", role="proposer", model="openai:gpt-5"), Seat(label="B", role="challenger", model="openai:x")))
    await store.admit(theirs, Quota.operator(10))
    await store.add_turn(Turn(debate_id=theirs.id, round=1, seat="A", role="proposer", kind="opening",
                              model="openai:gpt-5", output_tokens=600_000))
    await store.finish_debate(theirs.id, Outcome(status="completed", rounds_completed=1))


async def run_watched(srv: FakeLLMServer, spec: DebateSpec, db: Path) -> tuple[Outcome, CollectingSink, Store]:
    settings = settings_for(srv)
    registry = ProviderRegistry(settings)
    store, sink = Store(db), CollectingSink()
    await store.start()
    try:
        await spend_the_month(store)
        engine = Engine(registry, settings, spend=SpendWatch(store, MONTH))
        outcome = await engine.run(spec, EventBus([sink], log=StoreSink(store)))
    finally:
        await registry.aclose()
    return outcome, sink, store


def stopped_by_the_budget(sink: CollectingSink) -> None:
    (notice,) = [e.text for e in sink.events if isinstance(e, Notice) and "DEBATE_BUDGET_USD_PER_MONTH" in e.text]
    assert notice.startswith("Stopped early: the $5.00 this bot may spend per month (DEBATE_BUDGET_USD_PER_MONTH) "
                             "is spent"), notice
    assert "$6." not in notice, "what the whole bot spent is the operator's to see"
    assert [e.round for e in sink.events if isinstance(e, RoundStarted)] == [1]
    assert [e for e in sink.events if isinstance(e, VerdictReached)], "the verdict covers the round played"


async def test_consensus_stops_after_the_round_in_which_the_budget_is_spent(
    llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    script_judge(llm_server, "A")
    spec = make_spec("consensus")
    outcome, sink, store = await run_watched(llm_server, spec, tmp_path / "d.db")
    try:
        assert outcome.status == "completed" and outcome.rounds_completed == 1, outcome
        stopped_by_the_budget(sink)
        assert {"distill", "judge"} <= {purpose for purpose, _ in store_rows(tmp_path / "d.db")}
        assert sum(c.cost_usd is None for c in await store.spent_calls(0)) > 0, "model-a has no known price"
    finally:
        await store.close()


async def test_stances_stops_after_the_round_in_which_the_budget_is_spent(
    llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    script_split(llm_server)
    script_stances_judge(llm_server)
    for i, model in enumerate(MODELS):
        llm_server.add_rule(Reply(text=envelope(STANCES[i], f"OPEN-{'ABC'[i]}: evidence")), debater(model, 1))
    spec = make_spec("stances", MODELS, judge="openai:omega-1", topic=TOPIC)
    outcome, sink, store = await run_watched(llm_server, spec, tmp_path / "d.db")
    try:
        assert outcome.status == "completed" and outcome.rounds_completed == 1, outcome
        stopped_by_the_budget(sink)
        rows = store_rows(tmp_path / "d.db")
        assert {"split", "judge"} <= {purpose for purpose, _ in rows}
        assert all(model == "openai:omega-1" for _, model in rows)
    finally:
        await store.close()


def store_rows(db: Path) -> list[tuple[str, str]]:
    """(purpose, model) of every call in `model_calls`, read as another process would."""
    conn = sqlite3.connect(db)
    try:
        return [(r[0], r[1]) for r in conn.execute("select purpose, model from model_calls")]
    finally:
        conn.close()


async def test_council_stops_after_its_answers_round_in_which_the_budget_is_spent(
    llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    script_council(llm_server, latency_s=0.0)
    spec = make_spec("council", COUNCIL_MODELS, judge=CHAIR, topic=COUNCIL_TOPIC)
    outcome, sink, store = await run_watched(llm_server, spec, tmp_path / "d.db")
    try:
        assert outcome.status == "completed" and outcome.rounds_completed == 1, outcome
        stopped_by_the_budget(sink)
        assert not [r for r in llm_server.requests if is_ranking(r)], "no member was asked to rank"
        assert ("judge", CHAIR) in store_rows(tmp_path / "d.db"), "the chair's synthesis is logged with its cost"
    finally:
        await store.close()


@pytest.mark.parametrize("spent", [True, False], ids=["budget-spent", "budget-left"])
async def test_a_jury_sits_only_while_the_budget_has_room(
    llm_server: FakeLLMServer, log_backend: LogBackend, spent: bool
) -> None:
    """Issue 57 item 1: the budget is checked after the last round, before the jury sits, as before each
    round. Spent: one judge decides (its two passes), the jurors are never asked, a notice says why;
    with room left the whole jury sits. In the log on both backends."""
    srv = llm_server
    script_debaters(srv)
    script_judge(srv, "A")  # the seat's one judge (openai:judge)
    for juror in JURORS:
        picks(srv, juror, "proposer")
    spec = jury_spec()
    settings = settings_for(srv, env=jury_env(srv))
    registry, sink = ProviderRegistry(settings), CollectingSink()
    async with log_backend.open(runner="serve:a") as store:
        await spend_the_month(store)
        budget = MONTH if spent else Budget(per_month=1000.0)
        try:
            engine = Engine(registry, settings, spend=SpendWatch(store, budget))
            outcome = await engine.run(spec, EventBus([sink], log=StoreSink(store)))
        finally:
            await registry.aclose()
        assert outcome.status == "completed" and outcome.rounds_completed == 1, outcome
        (verdict,) = [e.verdict for e in sink.events if isinstance(e, VerdictReached)]
        jurors_asked = [r for r in srv.requests if r.model in {j.split(":", 1)[1] for j in JURORS}]
        judged = {c.model for c in await store.spent_calls(0) if c.debate_id == spec.id} - {"openai:model-a",
                                                                                          "openai:model-b"}
        notices = [e.text for e in sink.events if isinstance(e, Notice) and "DEBATE_BUDGET_USD_PER_MONTH" in e.text]
        if spent:
            assert jurors_asked == [] and verdict.jury == (), "the jury did not sit"
            assert judged == {spec.judge}, judged
            (notice,) = notices
            assert notice.startswith("Budget reached: the $5.00 this bot may spend per month"), notice
            assert "one judge decides instead of the 3-judge jury" in notice, notice
        else:
            assert len(jurors_asked) == 6 and len(verdict.jury) == 3 and notices == []
            assert judged == set(JURORS), judged
