"""Spend budgets in Slack, through bolt's real dispatch against the Slack API peer (issue 20): each
variable refuses a start, a `continue` and a `rematch` with a private reply naming it, once the spend a
first process recorded plus the debate's estimate would pass it (the second process shares the log);
and a debate whose window is spent while it runs stops after its round, with a verdict and a notice."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.budgets import estimate_usd
from orchestrator.log import open_log
from orchestrator.models import DebateSpec, Outcome, Seat, Turn
from orchestrator.quotas import Quota
from tests.admission_slack_harness import LIMITS
from tests.budgets_slack_harness import LONG
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import is_judge, script_judge
from tests.slack_team_harness import answer, ask, debated, root_of

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

HELD_TOPIC = "Should the held debate wait?"
VARIABLES = {"DEBATE_BUDGET_USD_PER_WORKSPACE_DAY": ("U3", None), "DEBATE_BUDGET_USD_PER_USER_DAY": ("U1", "U3"),
             "DEBATE_BUDGET_USD_PER_MONTH": ("U3", None)}


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        yield p


def settings_for(tmp_path: Path, peer: SlackAPIPeer, llm: FakeLLMServer, **extra: object) -> object:
    return slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url, **extra)


CASES = [*((variable, "sqlite") for variable in VARIABLES),
         pytest.param("DEBATE_BUDGET_USD_PER_USER_DAY", "postgres", marks=pytest.mark.postgres)]


@pytest.mark.parametrize(("variable", "backend"), CASES)
async def test_each_budget_refuses_a_start_a_continue_and_a_rematch_privately(
    tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer, variable: str, backend: str,
    request: pytest.FixtureRequest
) -> None:
    llm_server.add_rule(Reply(text=LONG), match=lambda r: not is_judge(r))
    script_judge(llm_server, "A")
    log = {"DEBATE_DATABASE_URL": request.getfixturevalue("postgres_url")} if backend == "postgres" else {}
    async with SlackBot(settings_for(tmp_path, peer, llm_server, **log), LIMITS, name="first") as first:
        done = await debated(first, peer, "Tabs or spaces? --rounds 1", user="U1")
        record = await first.core.store.get_debate(done, turns=False)
        assert record is not None and record.spec is not None and record.status == "completed"
        recorded = sum(c.counted_usd for c in await first.core.store.spent_calls(record.created_at - 60))
    assert recorded > 0.01, "the debate's turns and its judge passes are all in the log"
    estimate = estimate_usd(record.spec)  # a start or a rematch of one round; a continuation's is one round too
    assert estimate == pytest.approx(estimate_usd(record.spec, rounds=1))
    budget = estimate + recorded / 2  # what was spent plus one more such debate would pass it; one alone fits

    refused, admitted = VARIABLES[variable]
    settings = settings_for(tmp_path, peer, llm_server, **log, **{variable: str(budget)})
    async with SlackBot(settings, LIMITS, name="second") as second:  # a second process on the same log
        before = len(peer.of("chat.postMessage"))
        replies = [await answer(peer, await ask(second, peer, text, user=refused))
                   for text in ("Kafka or NATS? --rounds 1", f"continue {done}", f"rematch {done}")]
        for reply in replies:
            assert variable in reply and "is left of the" in reply and "resets at" in reply, reply
        assert len(peer.of("chat.postMessage")) == before, "nothing is posted for a refused start"
        again = await second.core.store.get_debate(done, turns=False)
        assert again is not None and (again.status, again.segment, again.rematches) == ("completed", 1, ())
        if admitted is not None:
            assert await debated(second, peer, "Vim or Emacs? --rounds 1", user=admitted)


async def test_a_debate_whose_budget_is_spent_while_it_runs_stops_after_its_round_with_a_verdict(
    tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    gate = asyncio.Event()

    def held(record: RequestRecord) -> bool:
        return not is_judge(record) and HELD_TOPIC in record.prompt_text

    llm_server.add_rule(Reply(text="I hold my position.", gate=gate), match=held)
    script_judge(llm_server, "A")
    budget = 5.0
    settings = settings_for(tmp_path, peer, llm_server, DEBATE_BUDGET_USD_PER_MONTH=str(budget))
    async with SlackBot(settings, LIMITS) as bot:
        await ask(bot, peer, f"{HELD_TOPIC} --rounds 3", user="U1")
        assert held(await llm_server.wait_for_requests(1))
        (running,) = [d for d in await bot.core.store.history(5) if d.status == "running"]
        record = await bot.core.store.get_debate(running.id, turns=False)
        assert record is not None and record.spec is not None and estimate_usd(record.spec) < budget

        # meanwhile the operator's own debate, in another process sharing the log, spends the month's budget
        async with open_log(tmp_path / "d.db", runner="cli:host:1") as cli:
            theirs = DebateSpec(topic="Cost check", judge="openai:gpt-5", seats=(
                Seat(label="A", role="proposer", model="openai:gpt-5"),
                Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-5")))
            await cli.admit(theirs, Quota.operator(10))
            await cli.add_turn(Turn(debate_id=theirs.id, round=1, seat="A", role="proposer", kind="opening",
                                    model="openai:gpt-5", output_tokens=600_000))  # $6 at gpt-5's price
            await cli.finish_debate(theirs.id, Outcome(status="completed", rounds_completed=1))
        gate.set()
        await bot.settle()

        ended = await bot.core.store.get_debate(running.id)
        assert ended is not None and ended.status == "completed", ended
        assert (ended.rounds_completed, ended.rounds_planned) == (1, 3)
        assert ended.verdict is not None and ended.verdict.winner
        assert {t.round for t in ended.turns} == {1}
        (notice,) = [n.text for n in ended.notices if "DEBATE_BUDGET_USD_PER_MONTH" in n.text]
        assert notice.startswith("Stopped early") and "after this round" in notice
        root = await root_of(bot, peer, running.id)
        shown = " ".join(m.text + str(m.blocks) for m in peer.thread(root.channel, root.ts))
        assert "Stopped early" in shown and "DEBATE_BUDGET_USD_PER_MONTH" in shown.replace("\\_", "_"), shown
