"""A `continue` is admitted like a start (issue 18, items 1 and 8), in the log, on both backends (a real
SQLite file, a real Postgres database): every limit counted for the person who asks, the running slot
theirs from when the continuation began, a refusal that changes nothing and lists exactly the debates
that count; atomic across two handles on one log (two fronts); and a log from before, whose running
debates keep holding their requesters' slots; `debate continue` on the host, held to the global cap."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from sqlite_utils import Database

from orchestrator.log import DebateLog, migrate_log
from orchestrator.log.postgres.schema import migrate
from orchestrator.log.schema import migrations
from orchestrator.models import DebateSpec, Interjection, Outcome, Seat, Verdict
from orchestrator.quotas import HOUR_S, STALE_AFTER_S, Quota, QuotaExceeded
from tests.cli_harness import debate, two_providers
from tests.fakes.llm_server import FakeLLMServer
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:model-a"),
         Seat(label="B", role="challenger", model="anthropic:model-b"))
T0 = 1_750_000_000.0
OPEN = Quota(max_running=100)


def spec(user: str, channel: str = "C1", *, workspace: str = "T1") -> DebateSpec:
    return DebateSpec(topic="Kafka or NATS?", seats=SEATS, judge="openai:judge", platform="slack",
                      workspace=workspace, channel=channel, requested_by=user)


async def finished(store: DebateLog, user: str, channel: str = "C1", at: float = T0) -> str:
    """A debate `user` started and that ended with a verdict; its id."""
    s = spec(user, channel)
    await store.admit(s, OPEN, at=at)
    await store.set_verdict(s.id, Verdict(winner="A"), at=at + 1)
    await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=1), at=at + 2)
    return s.id


async def end_segment(store: DebateLog, debate_id: str, segment: int, at: float) -> None:
    await store.set_verdict(debate_id, Verdict(winner="B"), at=at, number=segment)
    await store.finish_debate(debate_id, Outcome(status="completed", rounds_completed=segment), at=at)


def refused(limit: str, raised: pytest.ExceptionInfo[QuotaExceeded]) -> QuotaExceeded:
    assert raised.value.limit == limit, raised.value
    return raised.value


async def test_a_continuation_is_held_to_every_limit_for_whoever_asks_and_its_slot_is_theirs(
    log_backend: LogBackend
) -> None:
    quota = Quota(max_running=3, max_running_per_user=2, max_running_per_channel=3)
    async with log_backend.open(runner="serve:a") as store:
        ones = [await finished(store, "U1", f"C{n}", T0 + n) for n in range(1, 4)]

        assert await store.begin_continuation(ones[0], quota=quota, requested_by="U5", at=T0 + 10) == 2
        assert await store.begin_continuation(ones[1], quota=quota, requested_by="U5", at=T0 + 11) == 2
        facts = Interjection(debate_id=ones[2], author="Dana", user="U5", platform="slack", kind="facts",
                             text="We already run NATS.", at=T0 + 12)
        with pytest.raises(QuotaExceeded) as raised:  # U5 runs two already
            await store.begin_continuation(ones[2], quota=quota, requested_by="U5", facts=facts, at=T0 + 12)
        user = refused("user", raised)
        assert user.running == (ones[0], ones[1]) and "DEBATE_MAX_RUNNING_PER_USER" in str(user)
        assert f"You already have 2 debates running (`{ones[0]}`, `{ones[1]}`)" in str(user)
        untouched = await store.get_debate(ones[2], turns=False)
        assert untouched is not None and (untouched.status, untouched.segment) == ("completed", 1)
        assert untouched.interjections == (), "a refused continuation leaves no facts waiting"

        # the first starter holds none of the slots U5 took: they may start their own
        mine = spec("U1", "C4")
        await store.admit(mine, quota, at=T0 + 13)
        with pytest.raises(QuotaExceeded) as raised:  # three running in all: the global cap holds a continuation
            await store.begin_continuation(ones[2], quota=quota, requested_by="U6", at=T0 + 14)
        assert "3 debates are already running" in str(refused("global", raised))
        with pytest.raises(QuotaExceeded) as raised:
            await store.admit(spec("U1", "C5"), Quota(max_running=9, max_running_per_user=1), at=T0 + 15)
        assert refused("user", raised).running == (mine.id,), "only what U1 holds counts, and is listed"

        # a continuation counts in its debate's channel
        await end_segment(store, ones[0], 2, T0 + 16)
        channel = Quota(max_running=9, max_running_per_channel=1)
        seventh = spec("U7", "C3")
        await store.admit(seventh, channel, at=T0 + 17)
        with pytest.raises(QuotaExceeded) as raised:
            await store.begin_continuation(ones[2], quota=channel, requested_by="U8", at=T0 + 18)
        assert "DEBATE_MAX_RUNNING_PER_CHANNEL" in str(refused("channel", raised))

        # the operator (the CLI) takes a slot of the global cap, charged to no chat user
        assert await store.begin_continuation(ones[0], quota=Quota.operator(9), at=T0 + 19) == 3
        sixth = spec("U1", "C6")
        await store.admit(sixth, Quota(max_running=9, max_running_per_user=2), at=T0 + 20)
    held = dict(log_backend.sql("select id, held_by from debates where status = 'running'"))
    assert held == {ones[0]: None, ones[1]: "U5", mine.id: "U1", seventh.id: "U7", sixth.id: "U1"}
    assert sorted(log_backend.sql("select segment, requested_by from continuations"), key=str) == sorted(
        [(2, "U5"), (2, "U5"), (3, None)], key=str)


async def test_a_continuation_is_one_of_the_askers_starts_this_hour(log_backend: LogBackend) -> None:
    quota = Quota(max_running=9, max_starts_per_user_hour=2)
    async with log_backend.open() as store:
        debate = await finished(store, "U1")
        other = await finished(store, "U1", "C2")
        assert await store.begin_continuation(debate, quota=quota, requested_by="U5", at=T0 + 100) == 2
        await end_segment(store, debate, 2, T0 + 200)
        assert await store.begin_continuation(debate, quota=quota, requested_by="U5", at=T0 + 300) == 3
        await end_segment(store, debate, 3, T0 + 400)
        for attempt in (store.begin_continuation(other, quota=quota, requested_by="U5", at=T0 + 500),
                        store.admit(spec("U5"), quota, at=T0 + 500)):
            with pytest.raises(QuotaExceeded) as raised:
                await attempt
            hourly = refused("hourly", raised)
            assert hourly.frees_at == T0 + 100 + HOUR_S and "DEBATE_MAX_STARTS_PER_USER_HOUR" in str(hourly)
        # U1's own starts are U1's: two this hour, none of them taken by U5's continuations
        with pytest.raises(QuotaExceeded) as raised:
            await store.admit(spec("U1"), quota, at=T0 + 600)
        assert refused("hourly", raised).frees_at == T0 + HOUR_S
        assert await store.begin_continuation(other, quota=quota, requested_by="U5", at=T0 + 101 + HOUR_S) == 2


async def test_a_continued_debate_holds_its_slot_from_when_the_continuation_began(log_backend: LogBackend) -> None:
    one = Quota(max_running=1)
    async with log_backend.open() as store:
        old = await finished(store, "U1")
        later = T0 + STALE_AFTER_S + 600  # created more than STALE_AFTER_S ago, continued now
        await store.begin_continuation(old, quota=one, requested_by="U5", at=later)
        with pytest.raises(QuotaExceeded) as raised:
            await store.admit(spec("U2"), one, at=later + 1)
        assert "1 debate is already running" in str(refused("global", raised))
        # …and it goes stale only STALE_AFTER_S after the continuation began
        await store.admit(spec("U2"), one, at=later + STALE_AFTER_S + 1)


async def test_a_refusal_lists_exactly_the_debates_that_count_and_says_how_many(log_backend: LogBackend) -> None:
    async with log_backend.open() as store:
        first, second = spec("U1"), spec("U1")
        await store.admit(first, OPEN, at=T0)
        await store.admit(second, OPEN, at=T0 + 1)
        stale = spec("U1")
        await store.admit(stale, OPEN, at=T0 - STALE_AFTER_S - 10)  # its process died long ago: holds nothing
        with pytest.raises(QuotaExceeded) as raised:  # the limit was lowered to 1 while two run
            await store.admit(spec("U1"), Quota(max_running=9, max_running_per_user=1), at=T0 + 2)
        text = str(refused("user", raised))
        assert raised.value.running == (first.id, second.id) and stale.id not in text
        assert text.startswith(f"You already have 2 debates running (`{first.id}`, `{second.id}`); the most one "
                               "person may run at once here is 1 (DEBATE_MAX_RUNNING_PER_USER).")
        with pytest.raises(QuotaExceeded) as raised:
            await store.admit(spec("U2"), Quota(max_running=1), at=T0 + 3)
        assert str(refused("global", raised)).startswith("2 debates are already running; the most this bot runs at "
                                                         "once is 1 (DEBATE_MAX_CONCURRENT).")


async def test_concurrent_continuations_from_two_processes_never_pass_a_limit(log_backend: LogBackend) -> None:
    quota = Quota(max_running=4, max_running_per_user=2)
    async with log_backend.open(runner="serve:a") as a, log_backend.open(runner="serve:b") as b:
        debates = [await finished(a, "U1", f"C{n}", T0 + n) for n in range(10)]

        async def attempt(store: DebateLog, debate_id: str, user: str) -> str | None:
            try:
                await store.begin_continuation(debate_id, quota=quota, requested_by=user)
            except QuotaExceeded as exc:
                return exc.limit
            return None

        results = await asyncio.gather(*(attempt((a, b)[n % 2], d, f"U{5 + n % 3}") for n, d in enumerate(debates)))
        assert results.count(None) == 4
        running = log_backend.sql("select held_by from debates where status = 'running'")
        assert len(running) == 4 and all(running.count(u) <= 2 for u in set(running)), running


def before_slots(log_backend: LogBackend) -> None:
    """A log at the schema before running slots were recorded, with one running debate of U1's."""
    if log_backend.name == "sqlite":
        db = Database(log_backend.target)
        migrations.apply(db, stop_before="m010_running_slots")
        db.close()
    else:
        async def old() -> None:
            async with await psycopg.AsyncConnection.connect(log_backend.target, autocommit=True) as conn:
                await migrate(conn, stop_before="m010_running_slots")

        asyncio.run(old())
    log_backend.insert("debates", [{"id": "run00001", "topic": "Tabs or spaces?", "format": "challenge",
                                    "status": "running", "created_at": "2025-06-15T15:00:00+00:00",
                                    "platform": "slack", "workspace": "T1", "channel": "C1", "requested_by": "U1"}])


async def test_a_log_from_before_keeps_its_running_debates_slots_with_their_requesters(
    log_backend: LogBackend
) -> None:
    await asyncio.to_thread(before_slots, log_backend)
    at = datetime(2025, 6, 15, 15, 1, tzinfo=UTC).timestamp()  # a minute after the old debate was created
    async with log_backend.open() as store:
        with pytest.raises(QuotaExceeded) as raised:
            await store.admit(spec("U1"), Quota(max_running=9, max_running_per_user=1), at=at)
        assert refused("user", raised).running == ("run00001",)
        with pytest.raises(QuotaExceeded):
            await store.admit(spec("U1"), Quota(max_running=9, max_starts_per_user_hour=1), at=at)


@pytest.mark.slow
@pytest.mark.postgres
async def test_migrate_log_carries_who_holds_each_slot_and_who_asked_each_continuation(
    tmp_path: Path, postgres_url: str
) -> None:
    sqlite, postgres = LogBackend("sqlite", str(tmp_path / "a.db")), LogBackend("postgres", postgres_url)
    at = T0 + STALE_AFTER_S + 600
    async with sqlite.open() as store:
        continued = await finished(store, "U1")
        await store.begin_continuation(continued, quota=OPEN, requested_by="U5", at=at)
    copied = await migrate_log(Path(sqlite.target), postgres.target)
    assert copied.tables["continuations"] == 1
    async with postgres.open() as store:
        with pytest.raises(QuotaExceeded) as raised:  # U5's, since the continuation began: not stale
            await store.admit(spec("U5"), Quota(max_running=9, max_running_per_user=1), at=at + 1)
        assert refused("user", raised).running == (continued,)
        with pytest.raises(QuotaExceeded) as raised:
            await store.admit(spec("U5"), Quota(max_running=9, max_starts_per_user_hour=1), at=at + 1)
        assert refused("hourly", raised).frees_at == at + HOUR_S


@pytest.mark.slow
async def test_debate_continue_on_the_host_is_held_to_the_global_cap(tmp_path: Path, log_backend: LogBackend
                                                                     ) -> None:
    """`debate continue` in a real subprocess, sharing the log with a front whose chat debate runs."""
    async with FakeLLMServer() as srv:
        script_judge(srv)
        env = two_providers(tmp_path, srv) | log_backend.env | {"DEBATE_MAX_CONCURRENT": "1"}
        code, out, err = await debate(tmp_path, "run", "Tabs or spaces?", "--rounds", "1", "--json", env=env)
        assert code == 0, err
        debate_id = json.loads(out)["id"]
        async with log_backend.open(runner="serve:elsewhere") as front:
            await front.admit(spec("U1"), OPEN)
            srv.requests.clear()
            code, _, err = await debate(tmp_path, "continue", debate_id, env=env)
            assert code == 2 and "1 debate is already running" in err and "DEBATE_MAX_CONCURRENT" in err, err
            assert len(err.strip().splitlines()) == 1 and srv.requests == []
            record = await front.get_debate(debate_id, turns=False)
            assert record is not None and (record.status, record.segment) == ("completed", 1)
