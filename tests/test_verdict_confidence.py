"""Verdicts that know when not to decide: confidence computed by the stated rules (confidence.py), No clear
winner when a jury has no majority or a judge's split has no tie-break, cruxes on every verdict, the
evidence checks' seam, and the calibration figures (both log backends; `debate history` as a subprocess)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from markupsafe import escape

from bots.page import page_link
from bots.slack.views import show_text
from orchestrator.debate import confidence
from orchestrator.debate.cruxes import merged, read_cruxes, undecided_recommendation
from orchestrator.export import to_json, to_markdown
from orchestrator.log import DebateLog, Scope, Store
from orchestrator.models import Crux, DebateSpec, EvidenceCheck, Outcome, Seat, Verdict, Vote
from tests.cli_harness import clean_env, debate
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.jury_commands_harness import jury_env
from tests.llm_scripts import verdict_json
from tests.log_backends import LogBackend
from tests.page_harness import local, log_debate, serve_pages
from tests.page_harness import settings as page_settings

STAFFING = {"disagreement": "Whether the team can staff a Go service", "settle": "the on-call rota for next quarter"}
COST = {"disagreement": "Whether the 2x benchmark holds on production data", "settle": "a replay of one day's traffic"}


# -- the rules, one by one ----------------------------------------------------------------------------

@pytest.mark.parametrize(("usable", "split", "tiebreak", "level"), [
    (2, False, "none", "high"), (2, True, "sided", "medium"), (2, True, "neither", "low"), (1, False, "none", "low"),
    (2, True, "none", "none"), (2, True, "failed", "none"),
])
def test_a_single_judges_confidence_follows_its_passes(usable: int, split: bool, tiebreak: confidence.TiebreakOutcome,
                                                       level: str) -> None:
    rated = confidence.single_judge(usable, split, tiebreak)
    assert rated.level == level and rated.rule in dict((r, lvl) for lvl, r in confidence.RULES)


@pytest.mark.parametrize(("votes", "undecided", "level", "winner"), [
    (["A", "A", "A"], 0, "high", "A"), (["A", "A", "B"], 0, "medium", "A"), (["A", "A"], 1, "medium", "A"),
    (["A"], 2, "low", "A"), (["A", "B"], 0, "none", None), (["B", "A", "A", "B"], 0, "none", None),
    ([], 3, "none", None), (["A", "A", "B", "C"], 0, "none", None),  # a plurality is no majority
])
def test_a_jurys_confidence_follows_its_margin_and_a_tie_is_no_clear_winner(
    votes: list[str | None], undecided: int, level: str, winner: str | None,
) -> None:
    rated, picked = confidence.jury(votes, undecided)
    assert (rated.level, picked) == (level, winner)
    flipped, picked_again = confidence.jury(list(reversed(votes)), undecided)
    assert (flipped.level, picked_again) == (level, winner), "the jurors' order never decides"


def check(seat: str, status: str) -> EvidenceCheck:
    return EvidenceCheck(seat=seat, quote="q", source="S1", status=status)  # type: ignore[arg-type]


def test_no_evidence_checks_leave_the_agreement_alone_and_checks_can_only_lower_it() -> None:
    high = confidence.Rated("high", confidence.JURY_UNANIMOUS)
    assert confidence.evidence_tally([]) is confidence.NO_EVIDENCE_CHECKS
    assert confidence.with_evidence(high, "A", confidence.NO_EVIDENCE_CHECKS) == high

    def rated(*checks: EvidenceCheck) -> confidence.Rated:
        return confidence.with_evidence(high, "A", confidence.evidence_tally(checks))

    assert rated(check("A", "verified"), check("B", "not_found")) == high
    assert rated(check("A", "not_checked"), check("B", "not_checked")) == high  # fetching off: tells nothing
    assert rated(check("A", "verified"), check("A", "not_checked")) == high
    assert rated(check("A", "verified"), check("A", "not_found")).level == "medium"
    assert rated(check("A", "not_found"), check("A", "unreachable"), check("B", "verified")).level == "low"
    both = rated(check("A", "not_found"), check("B", "not_found"))
    assert both.no_clear_winner and both.rule == confidence.EVIDENCE_UNVERIFIED_BOTH
    low = confidence.Rated("low", confidence.ONE_PASS)
    assert confidence.with_evidence(low, "A", confidence.evidence_tally([check("A", "not_found")])) == low


def test_cruxes_are_read_in_any_shape_and_merged_by_how_many_passes_raised_them() -> None:
    assert read_cruxes([STAFFING, "Cost of the migration — settled by: the vendor quote"], ()) == (
        Crux(**STAFFING), Crux(disagreement="Cost of the migration", settle="the vendor quote"))
    assert read_cruxes(None, ("Whether it scales",)) == (Crux(disagreement="Whether it scales"),)
    assert len(read_cruxes([f"point {i}" for i in range(6)], ())) == 3
    one = (Crux(**STAFFING), Crux(disagreement="Licensing"))
    two = (Crux(**COST), Crux(disagreement="whether the team can STAFF a Go service!"))
    three = (Crux(disagreement="Licensing", settle="legal's reading"), Crux(**COST))
    ranked = merged([one, two, three, (Crux(**COST),)])
    assert [c.disagreement for c in ranked] == [COST["disagreement"], STAFFING["disagreement"], "Licensing"]
    assert ranked[2].settle == "legal's reading"  # a settle any pass named fills one that had none
    a = Verdict(winner="A", recommendation="Use Go.")
    b = Verdict(winner="B", recommendation="Stay on Python.")
    assert undecided_recommendation([a, b], ranked) == ("No side has won yet: gather this first — a replay of one "
                                                        "day's traffic; the on-call rota for next quarter; legal's "
                                                        "reading.")
    assert undecided_recommendation([a, a], ranked) == "Use Go."


# -- scripted debates through the real CLI, the LLM peer scripting every juror ------------------------------

JURY4 = "gemini:juror-one,ollama:qwen-juror-two,ollama:llama-juror-three,gemini:juror-four"


def juror_with_cruxes(srv: FakeLLMServer, model: str, side: str, cruxes: list[dict[str, str]]) -> None:
    name = model.split(":", 1)[1]
    for first in ("proposer", "challenger"):
        letter = "A" if first == side else "B"
        srv.add_rule(Reply(text=verdict_json(letter, cruxes=cruxes, recommendation=f"Follow the {side}.")),
                     lambda r, n=name, f=first: r.model == n and f"- Debater A: {f}" in r.prompt_text)


@pytest.mark.slow
async def test_a_jury_split_two_two_ends_no_clear_winner_with_cruxes_in_the_export(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        sides = ("challenger", "proposer", "proposer", "challenger")
        for model, side in zip(JURY4.split(","), sides, strict=True):
            juror_with_cruxes(srv, model, side, [COST, STAFFING] if side == "proposer" else [STAFFING])
        env = jury_env(tmp_path, srv)
        code, out, err = await debate(tmp_path, "run", "Should we rewrite ingest in Go?", "--rounds", "1",
                                      "--judges", JURY4, "--json", env=env)
        assert code == 0, err
        debate_id = json.loads(out)["id"]
        code, exported, err = await debate(tmp_path, "export", debate_id, "--format", "json", env=env)
        assert code == 0, err
        code_s, shown, _ = await debate(tmp_path, "show", debate_id, env=env)
        code_h, history, _ = await debate(tmp_path, "history", env=env)

    verdict = json.loads(exported)["verdict"]
    assert verdict["confidence"] == "none" and verdict["no_clear_winner"] is True
    assert verdict["winner"] is None and verdict["winner_label"] is None
    assert "no majority" in verdict["confidence_rule"] and verdict["jury_tally"].startswith("Jury 2–2")
    assert verdict["cruxes"] == [STAFFING, COST]  # raised by all four jurors, then by two
    assert verdict["evidence_checks"] == []
    # the jurors disagreed on what to do: the verdict says what to gather first
    assert verdict["recommendation"].startswith("No side has won yet: gather this first")
    assert code_s == 0 and "Verdict: No clear winner" in shown and "1. Whether the team can staff a Go service" in shown
    assert code_h == 0 and "no clear winner" in history


@pytest.mark.slow
async def test_a_unanimous_jury_is_high_confidence_in_the_export(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        for model in JURY4.split(",")[:3]:
            juror_with_cruxes(srv, model, "proposer", [COST])
        env = jury_env(tmp_path, srv)
        code, out, err = await debate(tmp_path, "run", "Should we rewrite ingest in Go?", "--rounds", "1",
                                      "--judges", ",".join(JURY4.split(",")[:3]), "--json", env=env)
        assert code == 0, err
        code, exported, err = await debate(tmp_path, "export", json.loads(out)["id"], "--format", "json", env=env)
        assert code == 0, err

    verdict = json.loads(exported)["verdict"]
    assert verdict["confidence"] == "high" and verdict["winner_label"] == "A" and not verdict["no_clear_winner"]
    assert verdict["confidence_rule"] == confidence.JURY_UNANIMOUS
    assert verdict["cruxes"] == [COST] and verdict["evidence_checks"] == []


# -- the log: the confidence column and the calibration figures, on both backends ---------------------------

SEATS = (Seat(label="A", role="proposer", model="openai:model-a"),
         Seat(label="B", role="challenger", model="openai:model-b"))


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


async def rated(store: DebateLog, id: str, level: str, winner: str, *sides: str, workspace: str = "T1") -> None:
    spec = DebateSpec(id=id, topic="Kafka or NATS?", seats=SEATS, judge="openai:judge", platform="slack",
                      workspace=workspace, channel="C1")
    await store.create_debate(spec)
    await store.set_verdict(id, Verdict(winner=winner, recommendation="Use NATS.", confidence=level,  # type: ignore[arg-type]
                                        confidence_rule="a rule", cruxes=(Crux(**COST),)))
    await store.finish_debate(id, Outcome(status="completed", rounds_completed=1))
    for n, side in enumerate(sides):
        await store.record_vote(Vote(debate_id=id, user=f"U{n}", choice=f"side:{side}", platform="slack"))


async def test_calibration_counts_how_often_the_team_sided_with_each_level(store: DebateLog,
                                                                          log_backend: LogBackend) -> None:
    await rated(store, "high0001", "high", "A", "A", "A")  # sided
    await rated(store, "high0002", "high", "A", "B")  # against
    await rated(store, "high0003", "high", "A", "A", "B")  # a tie at the top that includes the winner: sided
    await rated(store, "medi0001", "medium", "B", "B")  # sided
    await rated(store, "none0001", "none", "A", "A", "B")  # the team found no clear winner either: sided
    await rated(store, "none0002", "none", "A", "B")  # the team did pick a side
    await rated(store, "low00001", "low", "A")  # no side votes: not counted
    await rated(store, "high0004", "high", "A", "B", workspace="T2")  # another workspace

    (row,) = log_backend.sql("select winner, confidence from verdicts where debate_id = ?", ["none0001"])
    assert tuple(row) == (None, "none")
    figures = {f.level: (f.sided, f.debates) for f in (await store.calibration()).levels}
    assert figures == {"high": (2, 4), "medium": (1, 1), "low": (0, 0), "none": (1, 2)}
    t1 = {f.level: (f.sided, f.debates) for f in (await store.calibration(Scope(platform="slack",
                                                                                  workspace="T1"))).levels}
    assert t1["high"] == (2, 3)
    assert (await store.calibration()).text() == ("Team sided with verdicts of confidence high 2 of 4 (50%) · "
                                                  "medium 1 of 1 (100%) · low — · no clear winner 1 of 2 (50%)")
    # a No clear winner verdict picked no one, so teams cannot disagree with its pick
    agreement = await store.judge_agreement()
    assert agreement.debates == 5


@pytest.mark.slow
async def test_history_and_usage_print_the_calibration_line(tmp_path: Path) -> None:
    db = tmp_path / "debates.db"
    async with Store(db) as store:
        await rated(store, "high0001", "high", "A", "A")
        await rated(store, "none0001", "none", "A", "A", "B")
        record = await store.get_debate("none0001")
    assert record is not None and record.verdict is not None
    assert "**No clear winner**" in to_markdown(record) and "1. Whether the 2x benchmark holds" in to_markdown(record)
    assert to_json(record)["verdict"]["cruxes"] == [COST]
    in_slack = show_text(record, None)  # Slack's `/debate show`
    assert "*Winner:* no clear winner" in in_slack and "*Cruxes:*\n1. Whether the 2x benchmark holds" in in_slack

    env = clean_env(tmp_path, DEBATE_DB=str(db))
    code, out, err = await debate(tmp_path, "history", env=env)
    assert code == 0, err
    assert ("Team sided with verdicts of confidence high 1 of 1 (100%) · medium — · low — · no clear winner 1 of 1"
            in out)
    assert "no clear winner" in out.splitlines()[0]  # the newest debate's line
    code, out, err = await debate(tmp_path, "history", "--json", env=env)
    assert code == 0, err
    assert json.loads(out)["calibration"]["none"] == {"debates": 1, "sided": 1, "rate": 1.0}
    code, out, err = await debate(tmp_path, "usage", env=env)
    assert code == 0, err
    assert "Team sided with verdicts of confidence high 1 of 1 (100%)" in out


# -- the debate page: the confidence with the rule that produced it, the cruxes --------------------------------

async def test_the_page_shows_no_clear_winner_its_rule_and_the_cruxes(store: DebateLog) -> None:
    config = page_settings()
    spec = await log_debate(store, finished=False)
    verdict = Verdict(winner="A", split=True, confidence="none", confidence_rule=confidence.SPLIT_NO_TIEBREAK,
                      recommendation="No side has won yet: gather this first — a replay of one day's traffic.",
                      cruxes=(Crux(**COST), Crux(disagreement="Who owns <b>on-call</b>")))
    await store.set_verdict(spec.id, verdict)
    await store.finish_debate(spec.id, Outcome(status="completed", rounds_completed=2, rounds_planned=2))
    link = await page_link(store, config, spec.id)
    assert link is not None
    async with serve_pages(store, config) as served, aiohttp.ClientSession() as http:
        async with http.get(local(link, served)) as response:
            assert response.status == 200
            html = await response.text()
    assert "No clear winner" in html and "Winner: <b>" not in html and "Judge's pick: <b>none</b>" in html
    assert f"No clear winner, by the rule: {escape(confidence.SPLIT_NO_TIEBREAK)}." in html
    assert "<h3>Cruxes</h3>" in html and "settled by:</i> a replay of one day&#39;s traffic" in html
    assert "Who owns &lt;b&gt;on-call&lt;/b&gt;" in html  # model text is escaped, never markup
    assert 'id="confidence-rules"' in html and escape(confidence.JURY_UNANIMOUS) in html
