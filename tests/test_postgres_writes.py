"""The Postgres log's writes in one pipeline (orchestrator/log/postgres/store.py `PgConn`), against a real
server: how many round trips each costs (counted by a proxy, tests/pg_round_trips.py), and the guarantees
the writes keep while their statements go out unanswered. Two logs repeating one write at once leave one
row; a write to an unknown debate raises and writes nothing (and leaves its connection usable); a stop
stays final against a finish that waited for it. The shared behaviour of both logs (idempotent repeats,
a stop is final) is tested in test_durable_log.py."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import psycopg
import pytest

from orchestrator.budgets import CallUsage
from orchestrator.log import DebateNotFoundError
from orchestrator.log.postgres import PostgresLog
from orchestrator.models import DebateSpec, Interjection, Outcome, Turn, Verdict
from orchestrator.quotas import Quota
from tests.debate_harness import make_spec
from tests.pg_round_trips import RoundTrips
from tests.postgres_writes_harness import _until_waiting

pytestmark = pytest.mark.postgres

Write = Callable[[PostgresLog, str], Awaitable[Any]]
SpecWrite = Callable[[PostgresLog, DebateSpec], Awaitable[Any]]


def turn(debate_id: str, text: str = "an opening") -> Turn:
    return Turn(debate_id=debate_id, round=1, seat="A", role="proposer", kind="opening", model="openai:gpt-5",
                text=text, started_at=1.0, input_tokens=10, output_tokens=20)


def call(debate_id: str) -> CallUsage:
    return CallUsage(debate_id=debate_id, attempt=f"{debate_id}:judge:1", at=2.0, purpose="judge",
                     model="openai:gpt-5", input_tokens=5, output_tokens=7)


def note(debate_id: str) -> Interjection:
    return Interjection(id=f"{debate_id}-n1", debate_id=debate_id, author="Ann", user="U1", text="consider the cost",
                        at=3.0)


VERDICT = Verdict(winner="A", reasoning="clearer", recommendation="ship it")
# each hot-path write and the round trips it costs on Postgres (it was 3 to 6 each, one per statement)
ROUND_TRIPS: dict[str, tuple[SpecWrite, int]] = {
    "add_turn": (lambda log, s: log.add_turn(turn(s.id)), 1),
    "add_turn again": (lambda log, s: log.add_turn(turn(s.id, "an opening run again")), 1),
    "add_call": (lambda log, s: log.add_call(call(s.id)), 1),
    "add_notice": (lambda log, s: log.add_notice(s.id, "warning", "Round 2 is incomplete."), 1),
    "take_interjections": (lambda log, s: log.take_interjections(s.id, 1, 2), 2),  # a note waits: the read, the write
    "set_message": (lambda log, s: log.set_message(s.id, "turn:1:A:opening:0", "slack", "C1", "171.1"), 1),
    "set_verdict": (lambda log, s: log.set_verdict(s.id, VERDICT), 1),
    "claim_request": (lambda log, s: log.claim_request(f"{s.id}:request"), 1),
    "create_debate again": (lambda log, s: log.create_debate(s.model_copy(update={"thread": "171.0"})), 1),
    "finish_debate": (lambda log, s: log.finish_debate(s.id, Outcome(status="completed", rounds_completed=1)), 2),
}


@pytest.fixture
def trips(postgres_log_url: str) -> Iterator[RoundTrips]:
    with RoundTrips.running(postgres_log_url) as counted:
        yield counted


async def test_each_hot_path_write_costs_its_round_trips(trips: RoundTrips) -> None:
    spec = make_spec("challenge")
    async with PostgresLog(trips.url) as log:
        before = trips.count
        await log.admit(spec, Quota(max_running=10, max_running_per_user=3, max_running_per_channel=3,
                                    max_starts_per_user_hour=5))
        costs = {"admit": trips.count - before}  # the counts are read in the first, the rows go in the second
        before = trips.count
        await log.create_debate(make_spec("challenge", topic="another"))
        costs["create_debate"] = trips.count - before
        await log.add_interjection(note(spec.id), max_waiting=3)
        for name, (write, _) in ROUND_TRIPS.items():
            before = trips.count
            await write(log, spec)
            costs[name] = trips.count - before
        record = await log.get_debate(spec.id)
    assert costs == {"admit": 2, "create_debate": 1} | {name: cost for name, (_, cost) in ROUND_TRIPS.items()}
    assert record is not None and record.status == "completed" and record.thread == "171.0"
    assert [(t.text, t.input_tokens) for t in record.turns] == [("an opening run again", 10)]
    assert record.input_tokens == 10 and record.verdict is not None and record.verdict.winner == "A"


async def test_a_write_answered_at_its_end_sends_no_begin_or_commit(trips: RoundTrips) -> None:
    spec = make_spec("challenge")
    async with PostgresLog(trips.url) as log:
        await log.create_debate(spec)
        sent: dict[str, int] = {}
        for name, write in (("add_turn", lambda: log.add_turn(turn(spec.id))),
                            ("add_notice", lambda: log.add_notice(spec.id, "warning", "Round 2 is incomplete."))):
            before = trips.statements
            await write()
            sent[name] = trips.statements - before
        record = await log.get_debate(spec.id)
    # the lock and the write(s), one implicit transaction: no BEGIN, no COMMIT around them
    assert sent == {"add_turn": 2, "add_notice": 2}  # add_turn: the lock, then its update-or-insert
    assert record is not None and [t.text for t in record.turns] == ["an opening"]


async def test_a_write_refused_after_its_statements_went_out_leaves_nothing(postgres_log_url: str) -> None:
    spec = make_spec("challenge")

    async def refused(c: Any) -> None:  # statements sent, no answer read, then a refusal in Python
        await c.send_lock(spec.id)
        await c.send("insert into notices (debate_id, at, level, text) values (:id, now(), 'warning', 'undone')",
                     {"id": spec.id})
        raise RuntimeError("refused")

    async def answered_then_refused(c: Any) -> None:  # an answer read half-way (a Sync), then the refusal
        await c.send("insert into notices (debate_id, at, level, text) values (:id, now(), 'warning', 'undone')",
                     {"id": spec.id})
        assert await c.one("select count(*) from notices where debate_id = :id", {"id": spec.id}) == 1
        await c.send("update debates set topic = 'undone' where id = :id", {"id": spec.id})
        raise RuntimeError("refused")

    async with PostgresLog(postgres_log_url) as log:
        await log.create_debate(spec)
        for write in (refused, answered_then_refused):
            with pytest.raises(RuntimeError):
                await log._write(write)
        record = await log.get_debate(spec.id)
        await log.add_notice(spec.id, "warning", "kept")  # the connection is fine after it
        kept = await log.get_debate(spec.id)
    assert record is not None and record.notices == () and record.topic == spec.topic
    assert kept is not None and [n.text for n in kept.notices] == ["kept"]


# the reads a front makes for each debate it starts or posts to, each one statement
ONE_STATEMENT_READS: dict[str, Write] = {
    "channel_defaults": lambda log, d: log.channel_defaults("slack", "T1", "C1"),
    "find_by_message": lambda log, d: log.find_by_message("slack", "C1", "171.0"),
    "get_message": lambda log, d: log.get_message(d, "root"),
    "messages": lambda log, d: log.messages(d),
    "tally": lambda log, d: log.tally(d),
    "take_interjections, none waiting": lambda log, d: log.take_interjections(d, 1, 2),  # most rounds
}


async def test_one_statement_writes_and_reads_run_without_a_transaction_around_them(trips: RoundTrips) -> None:
    spec = make_spec("challenge")
    async with PostgresLog(trips.url) as log:
        await log.create_debate(spec)
        before, statements = trips.count, trips.statements
        await log.set_message(spec.id, "root", "slack", "C1", "171.0")
        costs = (trips.count - before, trips.statements - statements)
        before, statements = trips.count, trips.statements
        await log.set_message(spec.id, "root", "slack", "C1", "171.0", final=True)  # the upsert: final goes up
        again = (trips.count - before, trips.statements - statements)
        with pytest.raises(DebateNotFoundError):  # an unknown (or purged) debate: refused, and nothing stays
            await log.set_message("no-such-debate", "root", "slack", "C1", "171.9")
        reads: dict[str, tuple[int, int]] = {}
        for name, read in ONE_STATEMENT_READS.items():
            before, statements = trips.count, trips.statements
            await read(log, spec.id)
            reads[name] = (trips.count - before, trips.statements - statements)
        messages = await log.messages(spec.id)
        left = await log.messages("no-such-debate")
    assert costs == again == (1, 1)  # no BEGIN, no COMMIT: the upsert alone
    assert reads == dict.fromkeys(ONE_STATEMENT_READS, (1, 1))
    assert [(m.key, m.message_id, m.final) for m in messages.values()] == [("root", "171.0", True)] and not left


def _holding_the_row(url: str, debate_id: str) -> psycopg.Connection[Any]:
    """A connection (in a transaction) holding the debate's row the way a long write of another process would."""
    holder = psycopg.connect(url)
    holder.execute("select 1 from debates where id = %s for update", [debate_id])
    return holder


REPEATED: dict[str, tuple[Write, str]] = {
    "add_turn": (lambda log, d: log.add_turn(turn(d)), "turns"),
    "add_call": (lambda log, d: log.add_call(call(d)), "model_calls"),
    "add_notice": (lambda log, d: log.add_notice(d, "warning", "Round 2 is incomplete."), "notices"),
}


@pytest.mark.parametrize("name", list(REPEATED))
async def test_two_processes_repeating_one_write_at_once_leave_one_row(postgres_log_url: str, name: str) -> None:
    """Both writes wait behind a third transaction on the debate's row, so they run together when it ends:
    whichever gets the row second must see the first one's row (a check sharing the locking statement's
    snapshot would not, and insert it again)."""
    write, table = REPEATED[name]
    spec = make_spec("challenge")
    async with PostgresLog(postgres_log_url) as first, PostgresLog(postgres_log_url) as second:
        await first.create_debate(spec)
        holder = await asyncio.to_thread(_holding_the_row, postgres_log_url, spec.id)
        try:
            both = asyncio.gather(write(first, spec.id), write(second, spec.id))
            await _until_waiting(postgres_log_url, 2)
            await asyncio.to_thread(holder.commit)
            results = await both
        finally:
            await asyncio.to_thread(holder.close)
    with psycopg.connect(postgres_log_url) as conn:
        rows = conn.execute(f"select count(*) from {table} where debate_id = %s", [spec.id]).fetchone()
    assert rows == (1,)
    assert results[0] == results[1]  # add_turn: the same id from both


def _check_in_the_locking_statement(url: str, debate_id: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute("with locked as (select id from debates where id = %(d)s for no key update)"
                     " insert into notices (debate_id, level, text) select %(d)s, 'warning', 'twice'"
                     " from locked where not exists (select 1 from notices where debate_id = %(d)s"
                     " and text = 'twice')", {"d": debate_id})


async def test_a_check_inside_the_locking_statement_would_let_both_insert(postgres_log_url: str) -> None:
    """Why `send_lock` is a statement of its own: the statement that waited for the lock keeps the snapshot
    it took before waiting, so its check misses the row the lock's holder wrote."""
    spec = make_spec("challenge")
    async with PostgresLog(postgres_log_url) as log:
        await log.create_debate(spec)
    holder = await asyncio.to_thread(_holding_the_row, postgres_log_url, spec.id)
    try:
        both = asyncio.gather(*(asyncio.to_thread(_check_in_the_locking_statement, postgres_log_url, spec.id)
                                for _ in range(2)))
        await _until_waiting(postgres_log_url, 2)
        await asyncio.to_thread(holder.commit)
        await both
    finally:
        await asyncio.to_thread(holder.close)
    with psycopg.connect(postgres_log_url) as conn:
        rows = conn.execute("select count(*) from notices where debate_id = %s", [spec.id]).fetchone()
    assert rows == (2,)


async def test_a_repeated_turn_keeps_its_row_and_its_search_entry(postgres_log_url: str) -> None:
    spec = make_spec("challenge")
    async with PostgresLog(postgres_log_url) as log:
        await log.create_debate(spec)
        first = await log.add_turn(turn(spec.id, "kafka partitions"))
        again = await log.add_turn(turn(spec.id, "nats subjects"))
        hits = [h.debate_id for h in await log.search("nats")]
        gone = await log.search("kafka")
    assert again == first and hits == [spec.id] and gone == []


async def test_a_start_that_changes_nothing_leaves_the_debates_row_as_it_was(postgres_log_url: str) -> None:
    """The front fills in where the debate landed, then the worker starts it with the same spec: that second
    write updates nothing (no new row version, its tsvector and index entries not made again)."""
    spec = make_spec("challenge")
    landed = spec.model_copy(update={"thread": "171.0"})

    def version() -> Any:
        with psycopg.connect(postgres_log_url) as conn:
            return conn.execute("select xmin::text, thread from debates where id = %s", [spec.id]).fetchone()

    async with PostgresLog(postgres_log_url) as log:
        await log.create_debate(spec)
        admitted = version()
        await log.create_debate(landed)  # the front: the thread is new
        filled = version()
        await log.create_debate(landed)  # the worker: nothing new
        started = version()
    assert admitted[1] is None and filled[1] == "171.0" and filled[0] != admitted[0]
    assert started == filled


UNKNOWN: dict[str, Write] = {
    "add_turn": lambda log, d: log.add_turn(turn(d)),
    "add_call": lambda log, d: log.add_call(call(d)),
    "add_notice": lambda log, d: log.add_notice(d, "warning", "lost"),
    "set_verdict": lambda log, d: log.set_verdict(d, VERDICT),
    "take_interjections": lambda log, d: log.take_interjections(d, 1, 2),
    "finish_debate": lambda log, d: log.finish_debate(d, Outcome(status="completed")),
}


async def test_a_write_for_an_unknown_debate_raises_writes_nothing_and_leaves_its_connection_usable(
        postgres_log_url: str) -> None:
    spec = make_spec("challenge")
    async with PostgresLog(postgres_log_url) as log:
        await log.create_debate(spec)
        for _ in range(6):  # past psycopg's threshold for preparing a statement on the connection
            for name, write in UNKNOWN.items():
                with pytest.raises(DebateNotFoundError) as raised:
                    await write(log, "nosuchdebate")
                assert raised.value.debate_id == "nosuchdebate", name
        for write in UNKNOWN.values():  # the same statements, on the same connection, for a debate there
            await write(log, spec.id)
        record = await log.get_debate(spec.id)
    with psycopg.connect(postgres_log_url) as conn:
        strays = [conn.execute(f"select count(*) from {t} where debate_id <> %s", [spec.id]).fetchone()
                  for t in ("turns", "model_calls", "notices", "verdicts")]
    assert strays == [(0,)] * 4
    assert record is not None and record.status == "completed" and len(record.turns) == 1


async def test_a_finish_that_waited_for_the_stop_changes_nothing(postgres_log_url: str) -> None:
    """The finish's lock waits while another transaction stops the debate; it then reads the stopped row."""
    spec: DebateSpec = make_spec("challenge")
    async with PostgresLog(postgres_log_url) as log:
        await log.create_debate(spec)
        holder = await asyncio.to_thread(_holding_the_row, postgres_log_url, spec.id)
        try:
            finishing = asyncio.ensure_future(log.finish_debate(spec.id, Outcome(status="completed",
                                                                                 rounds_completed=2)))
            await _until_waiting(postgres_log_url, 1)
            await asyncio.to_thread(holder.execute, "update debates set status = 'cancelled', error = 'Stopped.'"
                                                    " where id = %s", [spec.id])
            await asyncio.to_thread(holder.commit)
            await finishing
        finally:
            await asyncio.to_thread(holder.close)
        await log.finish_debate(spec.id, Outcome(status="failed", error="late"))  # and one after it
        record = await log.get_debate(spec.id)
    assert record is not None
    assert (record.status, record.error, record.rounds_completed, record.finished_at) == ("cancelled", "Stopped.", 0,
                                                                                          None)
