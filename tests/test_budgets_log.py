"""Spend budgets at admission, in the log, on both backends (a real SQLite file, a real Postgres database),
with two handles on one log as two processes sharing it (issue 20): each variable refuses a start, and a
`continue`, once the spend recorded in its window plus the estimate would pass it, naming the variable,
what is left and when the window resets; every model call counts (debaters' turns and judge passes), a
model with no known price at its vendor's highest; and two starts admitted at once cannot both count on
the same money."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.budgets import PROMPT_TOKENS, BudgetExceeded, CallUsage, estimate_usd
from orchestrator.log import DebateLog, migrate_log
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict
from orchestrator.providers.pricing import estimate_cost, highest_price, price_for
from orchestrator.providers.registry import budget as output_budget
from orchestrator.quotas import Budget, Quota, QuotaExceeded
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:gpt-5"),
         Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-5"))
NOON = datetime(2026, 3, 10, 12, 0, tzinfo=UTC).timestamp()
YESTERDAY = NOON - 86_400
LAST_MONTH = datetime(2026, 2, 27, 12, 0, tzinfo=UTC).timestamp()
OPEN = Quota(max_running=100)
TOKENS_PER_USD = 100_000  # gpt-5 writes $10 per million output tokens
_attempts = itertools.count()


def spec(user: str, workspace: str = "T1", *, rounds: int = 2) -> DebateSpec:
    return DebateSpec(topic="Kafka or NATS?", seats=SEATS, judge="openai:gpt-5", platform="slack",
                      workspace=workspace, channel="C1", requested_by=user, rounds=rounds)


def quota(**budget: float) -> Quota:
    return Quota(max_running=100, budget=Budget(**budget))


async def spent(store: DebateLog, user: str, usd: float, at: float, workspace: str = "T1") -> str:
    """A finished debate of `user` whose turn and judge pass cost `usd` in all (at gpt-5's price); its id."""
    s = spec(user, workspace)
    await store.admit(s, OPEN, at=at)
    tokens = int(usd * TOKENS_PER_USD)
    await store.add_turn(Turn(debate_id=s.id, round=1, seat="A", role="proposer", kind="opening",
                              model="openai:gpt-5", started_at=at, output_tokens=tokens // 2))
    await store.add_call(CallUsage(attempt=f"a{next(_attempts)}", debate_id=s.id, at=at + 1, purpose="judge",
                                   model="openai:gpt-5", output_tokens=tokens - tokens // 2))
    await store.set_verdict(s.id, Verdict(winner="A"), at=at + 2)
    await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=1), at=at + 2)
    return s.id


def refused_by(variable: str, raised: pytest.ExceptionInfo[QuotaExceeded]) -> BudgetExceeded:
    assert isinstance(raised.value, BudgetExceeded), raised.value
    assert raised.value.variable == variable and variable in str(raised.value), str(raised.value)
    return raised.value


WINDOWS = [
    # (budget, the variable, who is refused, who is admitted beside them)
    ("per_workspace_day", "DEBATE_BUDGET_USD_PER_WORKSPACE_DAY", ("U2", "T1"), ("U2", "T2")),
    ("per_user_day", "DEBATE_BUDGET_USD_PER_USER_DAY", ("U1", "T1"), ("U2", "T1")),
    ("per_month", "DEBATE_BUDGET_USD_PER_MONTH", ("U9", "T2"), None),
]


@pytest.mark.parametrize(("budget", "variable", "refused", "admitted"), WINDOWS)
async def test_each_budget_refuses_a_start_once_its_window_would_be_passed(
    log_backend: LogBackend, budget: str, variable: str, refused: tuple[str, str], admitted: tuple[str, str] | None
) -> None:
    async with log_backend.open(runner="serve:a") as a, log_backend.open(runner="serve:b") as b:
        await spent(a, "U1", 2.0, NOON - 3600)
        await spent(a, "U1", 50.0, LAST_MONTH)  # another month: counts for no window
        if budget != "per_month":
            await spent(a, "U1", 30.0, YESTERDAY)  # another day: counts for the month only
        recorded = sum(c.counted_usd for c in await b.spent_calls(LAST_MONTH - 1))
        assert recorded == pytest.approx(82.0 if budget != "per_month" else 52.0)

        start = spec(*refused)
        estimate = estimate_usd(start)
        window_spend = 2.0  # today's (the month's too: yesterday's is another month's only for the day budgets)
        limit = quota(**{budget: window_spend + estimate - 0.01})
        with pytest.raises(QuotaExceeded) as raised:
            await b.admit(start, limit, at=NOON)
        exceeded = refused_by(variable, raised)
        assert exceeded.spent_usd == pytest.approx(window_spend)
        left = f"only ${window_spend + estimate - 0.01 - window_spend:,.2f} is left"
        if budget == "per_month":  # what is left of the deployment's budget would say what all of it spent
            assert left not in exceeded.user_text() and "more than is left of the" in exceeded.user_text()
        else:
            assert left in str(exceeded)
        resets = "2026-04-01 00:00 UTC" if budget == "per_month" else "2026-03-11 00:00 UTC (in 12 h 0 min)"
        assert resets in str(exceeded), str(exceeded)
        assert await b.get_debate(start.id, turns=False) is None, "a refusal logs nothing"

        await b.admit(spec(*refused), quota(**{budget: window_spend + estimate + 0.01}), at=NOON)
        if admitted is not None:
            await b.admit(spec(*admitted), limit, at=NOON)


async def test_a_continuation_is_refused_by_a_budget_and_changes_nothing(log_backend: LogBackend) -> None:
    async with log_backend.open(runner="serve:a") as a, log_backend.open(runner="serve:b") as b:
        done = await spent(a, "U1", 1.0, NOON - 60)
        one_more = estimate_usd(spec("U5"), rounds=1)
        assert one_more < estimate_usd(spec("U5"))
        with pytest.raises(QuotaExceeded) as raised:
            await b.begin_continuation(done, quota=quota(per_user_day=1.0 + one_more - 0.001).for_cost(one_more),
                                       requested_by="U1", at=NOON)
        refused_by("DEBATE_BUDGET_USD_PER_USER_DAY", raised)
        record = await a.get_debate(done, turns=False)
        assert record is not None and (record.status, record.segment) == ("completed", 1)

        # whoever asks is who the budget counts for: U5 has spent nothing today
        assert await b.begin_continuation(done, quota=quota(per_user_day=1.0 + one_more - 0.001).for_cost(one_more),
                                          requested_by="U5", at=NOON) == 2
        # …and the calls of the segment U5 asked for count for U5
        await b.add_turn(Turn(debate_id=done, round=2, seat="A", role="proposer", kind="defense",
                              model="openai:gpt-5", started_at=NOON + 5, output_tokens=TOKENS_PER_USD))
        users = {(c.user, round(c.counted_usd, 6)) for c in await a.spent_calls(NOON - 3600)}
        assert ("U5", 1.0) in users and ("U1", 0.5) in users


async def test_a_model_with_no_known_price_counts_at_its_vendors_highest(log_backend: LogBackend) -> None:
    async with log_backend.open(runner="serve:a") as store:
        s = spec("U1")
        await store.admit(s, OPEN, at=NOON - 60)
        await store.add_turn(Turn(debate_id=s.id, round=1, seat="A", role="proposer", kind="opening",
                                  model="openai:not-a-priced-model", started_at=NOON - 60, output_tokens=100_000))
        (call,) = await store.spent_calls(NOON - 3600)
        assert call.cost_usd is None and estimate_cost(call.model, 0, 100_000) is None
        highest = highest_price("openai:not-a-priced-model").output_per_mtok
        assert highest >= 10.0 and call.counted_usd == pytest.approx(highest / 10)
        with pytest.raises(QuotaExceeded) as raised:
            await store.admit(spec("U2"), quota(per_month=highest / 10 + 0.01), at=NOON)
        assert refused_by("DEBATE_BUDGET_USD_PER_MONTH", raised).spent_usd == pytest.approx(highest / 10)


async def test_two_processes_starting_at_once_cannot_both_count_on_the_same_money(log_backend: LogBackend) -> None:
    """Nothing is spent yet when both ask: what admission reserved for the first is what the second sees."""
    async with log_backend.open(runner="serve:a") as a, log_backend.open(runner="serve:b") as b:
        estimate = estimate_usd(spec("U1"))
        limit = quota(per_workspace_day=estimate * 2.5)

        async def attempt(store: DebateLog, user: str) -> bool:
            try:
                await store.admit(spec(user), limit, at=NOON)
            except BudgetExceeded:
                return False
            return True

        results = await asyncio.gather(*(attempt(store, f"U{n}") for n in range(3) for store in (a, b)))
        assert results.count(True) == 2, results
        running = [d for d in await a.history(20) if d.status == "running"]
        assert len(running) == 2

        # a running debate's reservation shrinks by what it has spent: spend is never counted twice
        first = running[0].id
        await a.add_turn(Turn(debate_id=first, round=1, seat="A", role="proposer", kind="opening",
                              model="openai:gpt-5", started_at=NOON + 1, output_tokens=int(estimate * TOKENS_PER_USD)))
        with pytest.raises(BudgetExceeded) as raised:
            await b.admit(spec("U7"), limit, at=NOON + 2)
        assert raised.value.spent_usd == pytest.approx(estimate * 2)


@pytest.mark.slow
@pytest.mark.postgres
async def test_migrate_log_carries_every_calls_cost_and_the_reservations(tmp_path: Path, postgres_url: str) -> None:
    sqlite, postgres = LogBackend("sqlite", str(tmp_path / "a.db")), LogBackend("postgres", postgres_url)
    async with sqlite.open() as store:
        await spent(store, "U1", 2.0, NOON - 60)
        running = spec("U2")
        await store.admit(running, quota(per_month=100.0), at=NOON)
        before = await store.spent_calls(LAST_MONTH)
    copied = await migrate_log(Path(sqlite.target), postgres.target)
    assert copied.tables["model_calls"] == 1
    async with postgres.open() as store:
        assert sorted(c.counted_usd for c in await store.spent_calls(LAST_MONTH)) == sorted(
            c.counted_usd for c in before)
        with pytest.raises(BudgetExceeded) as raised:  # the running debate's reservation came along
            await store.admit(spec("U3"), quota(per_month=2.0 + estimate_usd(running) * 1.5), at=NOON + 1)
        assert raised.value.spent_usd == pytest.approx(2.0 + estimate_usd(running))


async def test_a_jury_is_priced_by_its_panel_and_refused_when_it_would_pass_the_budget(
    log_backend: LogBackend
) -> None:
    """Issue 57 item 1: a 5-juror debate (10 judge passes) was estimated as one judge's 2 passes, admitted
    under a budget that fits one judge, and spent past it. Each juror's two passes are priced now."""
    one_judge = spec("U1")
    five = ("openai:gpt-5",) * 5
    jury = one_judge.model_copy(update={"judges": five})
    gpt5 = price_for("openai:gpt-5")
    assert gpt5 is not None
    out = output_budget("openai", one_judge.effort)
    least_pass = (PROMPT_TOKENS * gpt5.input_per_mtok + out * gpt5.output_per_mtok) / 1_000_000
    assert estimate_usd(jury) - estimate_usd(one_judge) >= 4 * 2 * least_pass, "eight more passes at least"
    assert estimate_usd(jury, rounds=1) - estimate_usd(one_judge, rounds=1) >= 4 * 2 * least_pass  # `continue`

    fits_one = quota(per_user_day=estimate_usd(one_judge) + 0.01)
    async with log_backend.open(runner="serve:a") as a:
        with pytest.raises(QuotaExceeded) as raised:
            await a.admit(jury, fits_one, at=NOON)
        exceeded = refused_by("DEBATE_BUDGET_USD_PER_USER_DAY", raised)
        assert exceeded.estimated_usd == pytest.approx(estimate_usd(jury))
        assert await a.get_debate(jury.id, turns=False) is None
        await a.admit(one_judge, fits_one, at=NOON)


def test_a_council_is_priced_by_its_stages_not_by_rounds() -> None:
    """A council answers, ranks and has its chair write, whatever `rounds` says; its chair is priced once,
    at the chair's price, and a `continue` (one more ranking and synthesis) costs less than a start."""
    members = tuple(Seat(label="ABCDE"[i], role="debater", model="openai:gpt-5") for i in range(5))
    council = DebateSpec(topic="Which queue?", format="council", seats=members, judge="openai:gpt-5", rounds=1)
    assert estimate_usd(council) == pytest.approx(estimate_usd(council.model_copy(update={"rounds": 5})))
    dearer_chair = council.model_copy(update={"judge": "anthropic:claude-opus-4-1"})
    assert estimate_usd(dearer_chair) > estimate_usd(council)
    assert 0 < estimate_usd(council, rounds=1) < estimate_usd(council)
