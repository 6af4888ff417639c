"""The daily data pass (issue 55) on both backends, with a clock the test moves: retention purges exactly the
debates that ended more than DEBATE_RETENTION_DAYS ago (a running one never), keeps the usage figures equal,
leaves tombstones that say so; the audit trail is pruned at DEBATE_AUDIT_RETENTION_DAYS; and the pass runs in
one process at a time, once a day across every process sharing the log."""

from __future__ import annotations

from orchestrator.log.audit import OPERATOR
from orchestrator.log.purge import purged_text
from orchestrator.models import Outcome
from orchestrator.retention import DAY_S, HOLD_S, PASS, Retention, audit_budgets
from tests.log_backends import LogBackend
from tests.purge_log_harness import NOON, figures, rows_of
from tests.purge_log_harness import debate as seed


class Clock:
    def __init__(self, at: float) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


async def test_retention_purges_exactly_the_debates_past_the_window_and_keeps_the_usage(
    log_backend: LogBackend
) -> None:
    now = NOON + 40 * DAY_S
    clock = Clock(now)
    async with log_backend.open(runner="serve:a") as a, log_backend.open(runner="worker:b") as b:
        old = await seed(a, "U1", NOON, word="ancient")  # ended 40 days before `now`
        edge = await seed(a, "U2", now - 30 * DAY_S - 3600, word="edge")  # ended 30 days and 40 min before
        recent = await seed(a, "U1", now - 29 * DAY_S, word="recent")
        running = await seed(a, "U2", NOON, word="forever", finish=False)  # began 40 days ago, still running
        # finished_at is the time of its end, not its start: ended 20 days ago, begun 40 days ago
        late = await seed(a, "U1", NOON, word="late", finish=False)
        await a.finish_debate(late, Outcome(status="completed", rounds_completed=1), at=now - 20 * DAY_S)
        await a.add_audit(OPERATOR.entry("config", "C1", "rounds=3", at=now - 400 * DAY_S))
        await a.add_audit(OPERATOR.entry("config", "C2", "rounds=2", at=now - 10 * DAY_S))
        before = await figures(a)
        kept = {i: rows_of(log_backend, i) for i in (recent, running, late)}

        first = Retention(a, "serve:a:1", retention_days=30, audit_days=365, clock=clock)
        second = Retention(b, "worker:b:2", retention_days=30, audit_days=365, clock=clock)
        done = await first.run_once()
        assert done is not None and done.purged is not None
        assert sorted(done.purged.purged) == sorted([old, edge]) and done.audit_pruned == 1
        assert await second.run_once() is None, "the day's pass ran already: once a day across processes"

        for gone in (old, edge):
            assert set(rows_of(log_backend, gone).values()) == {0}
            tomb = await b.purged(gone)
            assert tomb is not None and "purged by retention" in purged_text(tomb)
        assert {i: rows_of(log_backend, i) for i in (recent, running, late)} == kept
        assert await figures(b) == before, "the budgets and `debate usage` count the same after retention"
        trail = await b.audit(0.0)
        assert [(e.action, e.target) for e in trail if e.action == "config"] == [("config", "C2")]
        assert any(e.action == "purge" and e.who == "retention" and e.detail.startswith("retention: 2 debates")
                   for e in trail)

        clock.at += DAY_S
        await a.finish_debate(running, Outcome(status="completed", rounds_completed=1), at=clock.at - 31 * DAY_S)
        done = await second.run_once()
        assert done is not None and done.purged is not None and done.purged.purged == [running]


async def test_one_process_at_a_time_holds_the_pass(log_backend: LogBackend) -> None:
    at = NOON
    async with log_backend.open() as a, log_backend.open() as b:
        assert await a.claim_pass(PASS, "a", at=at, every_s=DAY_S, hold_s=HOLD_S)
        assert not await b.claim_pass(PASS, "b", at=at + 60, every_s=DAY_S, hold_s=HOLD_S), "a holds it"
        # a died holding it: once its hold ran out, b takes the pass over (it never finished: still due)
        assert await b.claim_pass(PASS, "b", at=at + HOLD_S + 1, every_s=DAY_S, hold_s=HOLD_S)
        await b.end_pass(PASS, "b", at=at + HOLD_S + 2, done=True)
        assert not await a.claim_pass(PASS, "a", at=at + DAY_S, every_s=DAY_S, hold_s=HOLD_S), "done today"
        assert await a.claim_pass(PASS, "a", at=at + HOLD_S + 2 + DAY_S, every_s=DAY_S, hold_s=HOLD_S)


async def test_a_budget_changed_between_starts_is_in_the_audit_trail(log_backend: LogBackend) -> None:
    budgets = {"DEBATE_BUDGET_USD_PER_WORKSPACE_DAY": 20.0, "DEBATE_BUDGET_USD_PER_MONTH": None}
    async with log_backend.open() as store:
        assert await audit_budgets(store, budgets)
        assert not await audit_budgets(store, budgets), "the same budgets at the next start: nothing new"
        assert await audit_budgets(store, budgets | {"DEBATE_BUDGET_USD_PER_MONTH": 300.0})
        trail = [(e.who, e.detail) for e in await store.audit(0.0) if e.action == "budget"]
    assert trail == [("cli", "DEBATE_BUDGET_USD_PER_WORKSPACE_DAY=20 DEBATE_BUDGET_USD_PER_MONTH=300"),
                     ("cli", "DEBATE_BUDGET_USD_PER_WORKSPACE_DAY=20 DEBATE_BUDGET_USD_PER_MONTH=unset")]
