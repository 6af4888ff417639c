"""council: independent answers in parallel, anonymous rankings of the others, the chair's synthesis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bots.commands import CommandError, start_request
from orchestrator.debate.engine import Engine
from orchestrator.debate.formats.council_ranking import (
    Placing,
    Ranking,
    RankingError,
    aggregate,
    ballot,
    parse_ranking,
)
from orchestrator.events import DebateFinished, EventBus, RoundStarted, VerdictReached
from orchestrator.export import to_json, to_markdown
from orchestrator.log import Store
from orchestrator.models import DebateSpec, Interjection
from orchestrator.providers import ProviderRegistry
from tests.brief_sources import brief_of
from tests.cli_harness import clean_env, debate
from tests.council_scripts import (
    CHAIR,
    MODELS,
    SYNTHESIS,
    TOPIC,
    answer_text,
    is_answer,
    is_ranking,
    is_synthesis,
    ranking_reply,
    script_council,
)
from tests.debate_harness import CollectingSink, Result, make_spec, run_debate, settings_for
from tests.fakes.llm_server import FakeLLMServer, Reply


def council(models: tuple[str, ...] = MODELS) -> DebateSpec:
    return make_spec("council", models, judge=CHAIR, topic=TOPIC)


async def test_a_council_of_three_answers_first_ranks_anonymously_and_the_chair_synthesizes(
    llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    srv = llm_server
    script_council(srv)
    spec = council()
    result = await run_debate(srv, spec, db=tmp_path / "d.db")

    assert result.outcome.status == "completed", result.outcome.error
    answers = [r for r in srv.requests if is_answer(r)]
    rankings = [r for r in srv.requests if is_ranking(r)]
    (synthesis,) = [r for r in srv.requests if is_synthesis(r)]
    assert len(answers) == 3 and len(rankings) == 3
    assert max(r.started_at for r in answers) < min(r.started_at for r in rankings), "3 answers before any ranking"
    assert max(r.started_at for r in answers) < min(r.finished_at or 0 for r in answers), "answers in parallel"

    names = [m for model in (*MODELS, CHAIR) for m in (model, model.split(":")[1])] + ["openai"]
    by_model = {m.split(":")[1]: "ABC"[i] for i, m in enumerate(MODELS)}
    for request in rankings:
        own = by_model[request.model]
        prompt = request.prompt_text
        assert answer_text(own) not in prompt, "a ranker never sees its own answer"
        assert all(answer_text(o) in prompt for o in "ABC" if o != own), "it sees every other answer"
        assert not any(name.lower() in prompt.lower() for name in names), "no model name on a ballot"

    prompt = synthesis.prompt_text
    assert all(answer_text(label) in prompt for label in "ABC"), "every surviving answer"
    assert "points" in prompt and "B ranks: C › A" in prompt and "A ranks: B › C" in prompt, "the aggregate ranking"

    assert [(e.round, e.title) for e in result.of(RoundStarted)] == [(1, "Answers"), (2, "Rankings")]
    table = next(n for n in result.notices() if n.startswith("Aggregate ranking"))
    assert table.index(" B ") < table.index(" C ") < table.index(" A "), table
    (reached,) = result.of(VerdictReached)
    assert reached.verdict.winner == "B" and reached.verdict.recommendation == SYNTHESIS
    assert [s.seat for s in reached.verdict.scores] == ["B", "C", "A"]
    assert [s.score for s in reached.verdict.scores] == [4, 3, 2]
    assert isinstance(result.events[-1], DebateFinished)
    assert [t.kind for t in result.turns] == ["answer"] * 3 + ["ranking"] * 3
    ranked = next(t for t in result.turns if t.kind == "ranking" and t.seat == "A")
    assert ranked.text == "1. Member B — Member B cites a load test.\n2. Member C — Member C cites a load test."

    store = Store(tmp_path / "d.db")
    await store.start()
    try:
        record = await store.get_debate(spec.id)
    finally:
        await store.close()
    assert record is not None
    data = to_json(record)
    responses = [e["response"] for e in data["exchanges"]]
    assert [answer_text(label) for label in "ABC"] == sorted(responses[:3]), "the answers"
    assert [r.startswith("1. Member") for r in responses[3:]] == [True] * 3, "the rankings"
    assert data["verdict"]["recommendation"] == SYNTHESIS
    markdown = to_markdown(record)
    assert answer_text("A") in markdown and "1. Member B" in markdown and SYNTHESIS in markdown


async def test_a_failing_member_is_dropped_with_a_note_and_the_synthesis_covers_the_rest(
    llm_server: FakeLLMServer,
) -> None:
    srv = llm_server
    srv.add_rule(Reply(status=500), match=lambda r: r.model == "gamma-3" and is_answer(r))
    script_council(srv)
    result = await run_debate(srv, council())

    assert result.outcome.status == "completed", result.outcome.error
    assert any("Member C" in n and "dropped" in n for n in result.notices("warning"))
    rankings = [r for r in srv.requests if is_ranking(r)]
    assert sorted(r.model for r in rankings) == ["alpha-7", "beta-9"]
    (synthesis,) = [r for r in srv.requests if is_synthesis(r)]
    assert answer_text("A") in synthesis.last_user and answer_text("B") in synthesis.last_user
    assert answer_text("C") not in synthesis.last_user
    (reached,) = result.of(VerdictReached)
    assert reached.verdict.winner == "A", "each ranked the other first: the tie goes to seating order"
    assert reached.verdict.recommendation == SYNTHESIS


async def test_an_unreadable_ranking_gets_one_reminder_then_is_left_out(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(Reply(text="I like them all."), match=lambda r: r.model == "alpha-7" and is_ranking(r), times=2)
    script_council(srv)
    result = await run_debate(srv, council())

    assert result.outcome.status == "completed", result.outcome.error
    assert len([r for r in srv.requests if r.model == "alpha-7" and is_ranking(r)]) == 2
    assert any("Member A's ranking could not be read" in n for n in result.notices("warning"))
    (synthesis,) = [r for r in srv.requests if is_synthesis(r)]
    assert "A ranks:" not in synthesis.last_user and "B ranks:" in synthesis.last_user


async def test_a_failing_chair_leaves_the_top_ranked_answer_as_the_recommendation(llm_server: FakeLLMServer) -> None:
    srv = llm_server
    srv.add_rule(Reply(status=500), match=is_synthesis)
    script_council(srv)
    result = await run_debate(srv, council())

    (reached,) = result.of(VerdictReached)
    assert reached.verdict.winner == "B" and reached.verdict.recommendation == answer_text("B")
    assert any("could not write the final answer" in n for n in result.notices("warning"))


def test_ballots_are_shuffled_per_ranker_and_the_same_on_replay() -> None:
    first = ballot("d1", 2, "A", ["B", "C", "D", "E"])
    assert first == ballot("d1", 2, "A", ["B", "C", "D", "E"])
    assert set(first.values()) == {"B", "C", "D", "E"} and list(first) == ["A", "B", "C", "D"]
    drawn = {tuple(ballot(f"d{i}", 2, "A", ["B", "C", "D", "E"]).values()) for i in range(20)}
    assert len(drawn) > 1


def test_rankings_are_read_from_json_or_a_numbered_list_and_aggregated_by_borda() -> None:
    letters = {"A": "C", "B": "B"}
    ranking = parse_ranking('{"ranking": ["B", {"answer": "A", "reason": "Answer A is vague"}, "B", "Z"]}',
                            letters, "A")
    assert ranking.order == (Placing(member="B"), Placing(member="C", reason="Member C is vague"))
    listed = parse_ranking("My view:\n1. Answer A — strongest\n2. Answer B — weaker", letters, "A")
    assert [p.member for p in listed.order] == ["C", "B"]
    with pytest.raises(RankingError):
        parse_ranking("no idea", letters, "A")
    tie = aggregate([Ranking(ranker="A", order=(Placing(member="B"),)),
                     Ranking(ranker="B", order=(Placing(member="A"),))], ["A", "B"])
    assert [s.member for s in tie] == ["A", "B"], "a tie goes to seating order"


class NoteAt:
    """An audience with one note (`facts` too) for round `round_no`, nothing before or after."""

    def __init__(self, round_no: int, facts: Interjection) -> None:
        self.round_no, self.facts = round_no, facts

    async def take(self, debate_id: str, round: int) -> list[Interjection]:
        return [self.facts.model_copy(update={"round": round})] if round == self.round_no else []


async def test_continue_ranks_the_answers_again_with_the_new_facts_and_the_chair_writes_anew(
    llm_server: FakeLLMServer,
) -> None:
    srv = llm_server
    facts = "The platform team already runs a Kafka cluster for us."
    srv.add_rule(Reply(text="Use the existing Kafka cluster."),
                 match=lambda r: is_synthesis(r) and facts in r.last_user)
    script_council(srv)
    spec = council()
    first = await run_debate(srv, spec)
    (verdict,) = first.of(VerdictReached)
    srv.requests.clear()

    settings = settings_for(srv)
    registry = ProviderRegistry(settings)
    sink = CollectingSink()
    note = Interjection(debate_id=spec.id, author="Lee", text=facts, kind="facts")
    try:
        outcome = await Engine(registry, settings).continue_debate(
            spec, segment=2, history=first.turns, previous=verdict.verdict, rounds_done=2, carried=(0, 0, None),
            bus=EventBus([sink]), audience=NoteAt(3, note))
    finally:
        await registry.aclose()
    again = Result(outcome, sink.events)

    assert outcome.status == "completed", outcome.error
    assert not any(is_answer(r) for r in srv.requests), "the answers stand; only the ranking is done again"
    rankings = [r for r in srv.requests if is_ranking(r)]
    assert len(rankings) == 3 and all(facts in r.last_user and SYNTHESIS in r.last_user for r in rankings)
    by_model = {m.split(":")[1]: "ABC"[i] for i, m in enumerate(MODELS)}
    assert all(answer_text(by_model[r.model]) not in r.prompt_text for r in rankings)
    (synthesis,) = [r for r in srv.requests if is_synthesis(r)]
    assert SYNTHESIS in synthesis.last_user and all(answer_text(x) in synthesis.last_user for x in "ABC")
    assert [(e.round, e.title) for e in again.of(RoundStarted)] == [(3, "Continued")]
    assert [t.kind for t in again.turns] == ["continuation"] * 3
    (reached,) = again.of(VerdictReached)
    assert reached.number == 2 and reached.verdict.recommendation == "Use the existing Kafka cluster."
    assert reached.verdict.winner == "B" and reached.verdict.changed is False


@pytest.mark.slow
async def test_the_cli_runs_a_council_of_five_exports_it_and_rematches_it(tmp_path: Path) -> None:
    members = (*MODELS, "openai:delta-5", "openai:epsilon-2")
    async with FakeLLMServer() as srv:
        script_council(srv, members)
        env = clean_env(tmp_path, OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=srv.openai_base_url,
                        DEBATE_FORMAT="council")
        code, out, err = await debate(tmp_path, "run", TOPIC, "--debaters", ",".join(members), "--judge", CHAIR,
                                      "--json", env=env)
        assert code == 0, err
        data = json.loads(out)
        assert [s["label"] for s in data["seats"]] == list("ABCDE")
        assert data["verdict"]["recommendation"] == SYNTHESIS and len(data["exchanges"]) == 10
        code, markdown, err = await debate(tmp_path, "export", data["id"], "--format", "md", env=env)
        assert code == 0 and SYNTHESIS in markdown and "1. Member" in markdown and answer_text("E") in markdown
        code, shown, err = await debate(tmp_path, "show", data["id"], env=env)
        assert code == 0 and SYNTHESIS in shown and "B: 16 points — council place 1, average place 1.0" in shown, shown
        srv.requests.clear()
        code, _, err = await debate(tmp_path, "rematch", data["id"], env=env)
        assert code == 0, err
        assert len([r for r in srv.requests if is_ranking(r)]) == 5


def test_five_members_sit_only_on_a_council() -> None:
    five = ",".join(f"openai:m{i}" for i in range(5))
    assert start_request("q", format="council", debaters=five).debaters == tuple(five.split(","))
    with pytest.raises(CommandError, match="2 to 4 debaters"):
        start_request("q", format="challenge", debaters=five)
    with pytest.raises(CommandError, match="2 to 5 council members"):
        start_request("q", format="council", debaters=five + ",openai:m5")


async def test_a_note_reaches_every_ballot_and_the_chair_and_a_model_s_name_never_a_ballot(
    llm_server: FakeLLMServer,
) -> None:
    srv = llm_server
    srv.add_rule(Reply(text="As alpha-7 from openai:alpha-7, I say ANS-A."),
                 match=lambda r: r.model == "alpha-7" and is_answer(r))
    script_council(srv)
    spec = council()
    note = Interjection(debate_id=spec.id, author="Dana", text="Our budget is fixed at two engineers.")
    settings = settings_for(srv)
    registry = ProviderRegistry(settings)
    sink = CollectingSink()
    try:
        await Engine(registry, settings).run(spec, EventBus([sink]), audience=NoteAt(2, note))
    finally:
        await registry.aclose()

    rankings = [r for r in srv.requests if is_ranking(r)]
    assert len(rankings) == 3 and all(note.text in r.last_user for r in rankings)
    assert all("alpha-7" not in r.prompt_text for r in rankings)
    assert any("As [a model] from [a model], I say ANS-A." in r.last_user for r in rankings)
    (synthesis,) = [r for r in srv.requests if is_synthesis(r)]
    assert note.text in synthesis.last_user
    assert not any(note.text in r.last_user for r in srv.requests if is_answer(r)), "taken at round 2"


async def test_a_councils_citations_are_checked_and_marked_for_the_ballots_and_the_chair(
    llm_server: FakeLLMServer
) -> None:
    """Member A quotes the brief, B invents its quote, and A's ballot cites it too: every ballot and the
    chair read the answers with our marks, the chair reads A's ballot's, and the verdict keeps all three."""
    srv = llm_server
    brief = await brief_of(("design.md", "# Design\nOne queue.\n\n## Costs\nHosting is 3k a month, and the "
                                         "backups cost nothing extra."))
    srv.add_rule(Reply(text='ANS-A: per [S1 §2 "Hosting is 3k a month"] the managed queue is cheap.'),
                 match=lambda r: r.model == "alpha-7" and is_answer(r))
    srv.add_rule(Reply(text='ANS-B: per [S1 §2 "Hosting is free forever"] ours is cheaper.'),
                 match=lambda r: r.model == "beta-9" and is_answer(r))
    srv.add_rule(Reply(text=lambda body: ranking_reply(body).replace(
        "cites a load test.", 'cites [S1 \\"the backups cost nothing extra\\"].')),
        match=lambda r: r.model == "alpha-7" and is_ranking(r))
    script_council(srv)
    result = await run_debate(srv, council().model_copy(update={"brief": brief}))

    assert result.outcome.status == "completed", result.outcome.error
    (reached,) = result.of(VerdictReached)
    statuses = sorted((c.seat, c.round, c.status) for c in reached.verdict.evidence_checks)
    assert statuses == [("A", 1, "verified"), ("A", 2, "verified"), ("B", 1, "not_found")]
    ballots = [r for r in srv.requests if is_ranking(r)]
    for record in ballots:  # each sees the others' answers: A's and B's citations are marked where shown
        prompt = record.last_user
        if record.model != "alpha-7":
            assert '"Hosting is 3k a month"] <check status="verified"' in prompt
        if record.model != "beta-9":
            assert '"Hosting is free forever"] <check status="not found"' in prompt
        assert "<check status=" in prompt and "The bot checked the citations" in prompt
    (chair,) = [r for r in srv.requests if is_synthesis(r)]
    assert '"Hosting is 3k a month"] <check status="verified"' in chair.last_user
    assert '"Hosting is free forever"] <check status="not found"' in chair.last_user
    assert '"the backups cost nothing extra"] <check status="verified"' in chair.last_user
