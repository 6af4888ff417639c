"""The log on both backends (a real SQLite file, a real Postgres database): FTS, concurrency, votes, ids,
runners, sink; and the SQLite file's own schema, WAL and locking."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlite_utils import Database

from orchestrator.events import (
    DebateFinished,
    DebateStarted,
    EventBase,
    Notice,
    RoundCompleted,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    VerdictReached,
)
from orchestrator.log import (
    AmbiguousIdError,
    DebateLog,
    DebateNotFoundError,
    Store,
    StoreClosedError,
    StoreError,
    StoreSink,
)
from orchestrator.log.records import to_iso
from orchestrator.log.schema import MIGRATIONS_TABLE, migration_names, migrations
from orchestrator.log.search import SEARCH_RECENT_MATCHES
from orchestrator.models import DebateSpec, Outcome, Turn, Verdict, Vote
from orchestrator.providers import estimate_cost
from tests.log_backends import LogBackend
from tests.store_harness import CHALLENGER, PROPOSER, make_spec

CONTRACT_COLUMNS = {
    "debates": {
        "id", "topic", "format", "status", "created_at", "finished_at", "platform", "channel",
        "thread", "requested_by", "rounds_planned", "rounds_completed", "workspace", "channel_private", "runner",
        "effort", "judge", "input_tokens", "output_tokens", "cost_usd", "error", "warnings", "spec",
    },
    "seats": {"debate_id", "label", "role", "provider", "model"},
    "turns": {
        "id", "debate_id", "round", "seat", "role", "kind", "model", "text", "started_at",
        "duration_ms", "input_tokens", "output_tokens", "status", "error",
    },
    "verdicts": {"debate_id", "winner", "split", "reasoning", "recommendation", "json"},
    "votes": {"debate_id", "user", "choice", "platform", "at"},
    "messages": {"debate_id", "key", "platform", "channel", "message_id"},
    "notices": {"debate_id", "at", "level", "text"},
}  # fmt: skip


def make_turn(spec: DebateSpec, round: int, seat: str, text: str, **kw: object) -> Turn:
    s = spec.seat(seat)
    return Turn(
        debate_id=spec.id,
        round=round,
        seat=seat,
        role=s.role,
        kind="opening",
        model=s.model,
        text=text,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


# -- schema -------------------------------------------------------------------------------------


async def test_migrations_from_empty_and_idempotent_on_reopen(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    async with Store(path):
        pass
    async with Store(path) as again:
        spec = make_spec()
        await again.create_debate(spec)
    async with Store(path) as third:
        assert await third.get_debate(spec.id) is not None

    db = Database(path)
    rows = list(db[MIGRATIONS_TABLE].rows_where(order_by="id"))
    assert [r["name"] for r in rows] == migration_names()
    assert migration_names() == sorted(migration_names())  # numbered, applied in order
    assert len(rows) == len(set(r["name"] for r in rows))  # reopening applied nothing twice
    assert db.execute("pragma journal_mode").fetchone()[0] == "wal"
    for table, columns in CONTRACT_COLUMNS.items():
        assert columns <= set(db[table].columns_dict), table
    assert db["debates"].detect_fts() == "debates_fts"
    assert db["turns"].detect_fts() == "turns_fts"
    assert db["verdicts"].detect_fts() == "verdicts_fts"


async def test_migrates_forward_from_the_oldest_schema(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = Database(path)
    migrations.apply(db, stop_before=migration_names()[1])  # only the first migration
    db["debates"].insert({"id": "old0001", "topic": "legacy topic about tabs", "format": "challenge",
                          "status": "completed", "created_at": "2024-01-01T00:00:00.000000+00:00"})  # fmt: skip
    db.close()
    async with Store(path) as store:
        hits = await store.search("tabs")
        assert [h.debate_id for h in hits] == ["old0001"]  # FTS populated existing rows


async def test_unopened_store_says_so(tmp_path: Path) -> None:
    with pytest.raises(StoreClosedError, match="start"):
        await Store(tmp_path / "x.db").tally("nope")
    with pytest.raises(StoreError, match="DEBATE_DB"):
        await Store(tmp_path / "no" / "such" / "dir.db").start()
    store = Store(tmp_path / "y.db")
    await store.start()
    await store.close()
    await store.close()  # closing twice is harmless
    with pytest.raises(StoreClosedError):
        await store.tally("nope")


# -- full-text search ---------------------------------------------------------------------------

HOSTILE = ["AND (cats", '"', "'", "*", "NEAR(", "-", "débat", "🐈", "", "   ", "x" * 4000,
           'cats" OR "dogs', "cats*", "^cats", "topic:cats", "(", ")", "\\", "\x00", "NOT", '"""']  # fmt: skip


async def test_search_survives_hostile_queries_and_finds_the_right_debate(store: DebateLog) -> None:
    cats = make_spec("Cats and dogs: which pet suits a débat club? 🐈")
    other = make_spec("Tabs versus spaces")
    await store.create_debate(cats)
    await store.create_debate(other)
    await store.add_turn(make_turn(other, 1, "A", "Spaces align everywhere."))
    for query in HOSTILE:
        hits = await store.search(query)
        assert all(h.debate_id == cats.id for h in hits), query
    assert await store.search("") == []
    assert [h.debate_id for h in await store.search("AND (cats")] == [cats.id]
    assert [h.debate_id for h in await store.search("débat")] == [cats.id]
    assert [h.debate_id for h in await store.search("debat")] == [cats.id]  # diacritics folded
    assert [h.debate_id for h in await store.search("🐈")] == [cats.id]
    assert [h.debate_id for h in await store.search('cats" AND "dogs')] == [cats.id]  # literal words
    hit = (await store.search("cats"))[0]
    assert hit.where == "topic" and "[Cats]" in hit.snippet and hit.status == "running"


async def test_search_covers_turns_and_verdicts_one_hit_per_debate(store: DebateLog) -> None:
    spec = make_spec("Monorepo or polyrepo")
    await store.create_debate(spec)
    for round in (1, 2, 3):
        await store.add_turn(make_turn(spec, round, "A", f"Round {round}: bazel caching wins here."))
    await store.set_verdict(spec.id, Verdict(winner="A", reasoning="solid", recommendation="Adopt remote caching"))
    turn_hits = await store.search("bazel")
    assert len(turn_hits) == 1 and turn_hits[0].where == "turn" and "[bazel]" in turn_hits[0].snippet
    rec = await store.search("remote caching")
    assert [(h.debate_id, h.where) for h in rec] == [(spec.id, "recommendation")]


async def test_fts_triggers_follow_updates(store: DebateLog, log_backend: LogBackend) -> None:
    spec = make_spec("Kafka for the event bus")
    await store.create_debate(spec)
    await store.set_verdict(spec.id, Verdict(winner="A", recommendation="use kafka"))
    await store.set_verdict(spec.id, Verdict(winner="B", recommendation="use nats instead"))
    assert await store.search("kafka") != []  # topic still matches
    assert {h.where for h in await store.search("nats")} == {"recommendation"}
    assert [h.where for h in await store.search("kafka")] == ["topic"]  # old recommendation gone

    log_backend.sql("update debates set topic = 'Pulsar for the event bus' where id = ?", [spec.id])
    log_backend.sql("insert into turns (debate_id, round, seat, status, text) values (?, 1, 'A', 'ok', 'zeromq')",
                    [spec.id])
    assert [h.debate_id for h in await store.search("pulsar")] == [spec.id]
    assert [h.debate_id for h in await store.search("zeromq")] == [spec.id]
    assert all(h.where != "topic" for h in await store.search("kafka"))


async def test_search_for_a_common_word_ranks_the_best_and_newest_first_within_limit(
    store: DebateLog, log_backend: LogBackend
) -> None:
    debates, per_debate = 600, 5
    assert debates * per_debate > SEARCH_RECENT_MATCHES  # the word is common enough to bound the ranking
    ids = [f"c{i:05d}" for i in range(debates)]
    oldest, dense = ids[0], ids[590]

    start = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    log_backend.insert("debates", (
        {"id": debate_id, "topic": f"Filler debate number {i}", "format": "challenge", "status": "completed",
         "created_at": to_iso(start + 60 * i)}
        for i, debate_id in enumerate(ids)
    ))  # fmt: skip
    turns = []
    for debate_id in ids:
        for round in range(1, per_debate + 1):
            turns.append({"debate_id": debate_id, "round": round, "seat": "A", "status": "ok",
                          "text": "We measured latency again and it held steady across the quarter."})  # fmt: skip
    turns[0]["text"] = "Nobody mentioned zookeeper until the latency review."
    turns[590 * per_debate]["text"] = "Latency, latency, latency: tail latency is the whole argument."
    log_backend.insert("turns", turns)
    hits = await store.search("latency", limit=10)
    assert len(hits) == 10 and len({h.debate_id for h in hits}) == 10
    assert [h.rank for h in hits] == sorted(h.rank for h in hits)
    assert hits[0].debate_id == dense and hits[0].where == "turn" and "[Latency]" in hits[0].snippet
    # every other turn scores the same; ties go to the newest debates
    assert [h.debate_id for h in hits[1:]] == [i for i in reversed(ids) if i != dense][:9]
    assert all("[latency]" in h.snippet for h in hits[1:])
    assert len(await store.search("latency")) == 20
    # a word with few matches is ranked over the whole log, however old its debate
    assert [h.debate_id for h in await store.search("zookeeper")] == [oldest]
    assert [h.debate_id for h in await store.search("zookeeper latency")] == [oldest]


async def test_equal_matches_of_the_same_time_go_to_the_later_written_past_the_ranking_window(
    store: DebateLog, log_backend: LogBackend
) -> None:
    """Verdicts written at the same instant, each matching alike, more of them than the ranking window
    holds: the window and the order keep the ones written last (on Postgres, m015's index order)."""
    ids = [f"v{i:05d}" for i in range(SEARCH_RECENT_MATCHES + 200)]
    at = to_iso(datetime(2024, 1, 1, tzinfo=UTC).timestamp())
    log_backend.insert("debates", (
        {"id": debate_id, "topic": f"Filler debate number {i}", "format": "challenge", "status": "completed",
         "created_at": at}
        for i, debate_id in enumerate(ids)
    ))  # fmt: skip
    log_backend.insert("verdicts", ({"debate_id": debate_id, "winner": "A", "recommendation": "Adopt kafka", "at": at}
                                    for debate_id in ids))
    hits = await store.search("kafka", limit=5)
    assert [h.debate_id for h in hits] == ids[::-1][:5]
    assert {h.where for h in hits} == {"recommendation"} and all("[kafka]" in h.snippet for h in hits)

# -- concurrency --------------------------------------------------------------------------------


async def test_200_concurrent_writers_all_land(store: DebateLog) -> None:
    spec = make_spec()
    await store.create_debate(spec)
    turns = [make_turn(spec, 1 + i % 5, "AB"[i % 2], f"turn {i}").model_copy(update={"kind": f"k{i}"})
             for i in range(200)]  # 200 distinct turns: a repeat of one (round, seat, kind) updates its row
    votes = [Vote(debate_id=spec.id, user=f"u{i}", choice="agree" if i % 3 else "disagree") for i in range(200)]
    results = await asyncio.gather(*(store.add_turn(t) for t in turns), *(store.record_vote(v) for v in votes))
    ids = results[:200]
    assert len(set(ids)) == 200
    record = await store.get_debate(spec.id)
    assert record is not None
    assert len(record.turns) == 200
    assert [(t.round, t.id) for t in record.turns] == sorted((t.round, t.id) for t in record.turns)
    assert record.tally.total == 200
    assert record.tally.counts == {"agree": 133, "disagree": 67}


async def test_a_second_process_connection_waits_instead_of_locking(tmp_path: Path) -> None:
    """SQLite only: a writer in another process holds the file's lock; ours waits in its thread."""
    spec = make_spec()
    async with Store(tmp_path / "log.db") as store:
        await store.create_debate(spec)
        other = sqlite3.connect(tmp_path / "log.db", timeout=5)
        other.execute("BEGIN IMMEDIATE")
        pending = asyncio.ensure_future(store.add_turn(make_turn(spec, 1, "A", "after the other writer")))
        await asyncio.sleep(0.2)
        assert not pending.done()  # blocked in the writer thread, not on the event loop
        other.execute("ROLLBACK")
        other.close()
        assert await pending > 0


# -- votes, ids, messages -----------------------------------------------------------------------


async def test_vote_upsert_one_row_per_user(store: DebateLog, log_backend: LogBackend) -> None:
    spec = make_spec()
    await store.create_debate(spec)
    await store.record_vote(Vote(debate_id=spec.id, user="ana", choice="agree"))
    await store.record_vote(Vote(debate_id=spec.id, user="bo", choice="agree"))
    tally = await store.record_vote(Vote(debate_id=spec.id, user="ana", choice="side:B", platform="discord"))
    assert tally.counts == {"agree": 1, "side:B": 1} and tally.total == 2
    assert (await store.tally(spec.id)) == tally
    rows = log_backend.sql('select platform from votes where "user" = ?', ["ana"])
    assert rows == [("discord",)]
    with pytest.raises(DebateNotFoundError):
        await store.record_vote(Vote(debate_id="missing", user="ana", choice="agree"))


async def test_id_prefix_lookup(store: DebateLog) -> None:
    a = make_spec(id="abcd1111")
    b = make_spec(id="abcd2222")
    await store.create_debate(a)
    await store.create_debate(b)
    assert (await store.get_debate("abcd1")).id == a.id  # type: ignore[union-attr]
    assert (await store.get_debate("abcd2222")).id == b.id  # type: ignore[union-attr]
    assert await store.get_debate("abc") is None  # under 4 characters: exact ids only
    assert await store.get_debate("zzzz") is None
    assert await store.get_debate("ab%d") is None  # no LIKE wildcards
    with pytest.raises(AmbiguousIdError, match="abcd1111") as info:
        await store.get_debate("abcd")
    assert sorted(info.value.matches) == [a.id, b.id]


async def test_messages_roundtrip(store: DebateLog) -> None:
    spec = make_spec()
    await store.create_debate(spec)
    assert await store.get_message(spec.id, "root") is None
    await store.set_message(spec.id, "root", "slack", "C1", "1700000000.0001")
    await store.set_message(spec.id, "root", "slack", "C1", "1700000000.0002")
    assert await store.get_message(spec.id, "root") == "1700000000.0002"


# -- lifecycle of a debate ----------------------------------------------------------------------


async def test_finish_history_tokens_and_cost(store: DebateLog) -> None:
    first = make_spec("first topic", platform="slack", channel="C1")
    second = make_spec("second topic", platform="discord", channel="D9")
    await store.create_debate(first, at=1_700_000_000.0)
    await store.create_debate(second, at=1_700_000_100.0)
    await store.add_turn(make_turn(first, 1, "A", "x", input_tokens=1000, output_tokens=500))
    await store.add_turn(make_turn(first, 1, "B", "y", input_tokens=2000, output_tokens=100))
    cost = (estimate_cost(PROPOSER, 1000, 500) or 0) + (estimate_cost(CHALLENGER, 2000, 100) or 0)
    assert cost > 0
    await store.set_verdict(first.id, Verdict(winner="B", recommendation="R" * 500, split=True))
    await store.record_vote(Vote(debate_id=first.id, user="u", choice="agree"))
    await store.finish_debate(first.id, Outcome(status="completed", rounds_completed=2, warnings=("w1",)))

    record = await store.get_debate(first.id)
    assert record is not None
    assert (record.status, record.rounds_completed, record.input_tokens, record.output_tokens) == (
        "completed", 2, 3000, 600)  # fmt: skip
    assert record.cost_usd == pytest.approx(cost) and record.warnings == ("w1",)
    assert record.finished_at is not None and record.created_at == 1_700_000_000.0
    assert record.spec == first and [s.label for s in record.seats] == ["A", "B"]

    history = await store.history()
    assert [h.id for h in history] == [second.id, first.id]  # newest first
    top = history[1]
    assert (top.winner, top.winner_model, top.split, top.votes) == ("B", CHALLENGER, True, 1)
    assert top.recommendation is not None and len(top.recommendation) <= 200
    assert [h.id for h in await store.history(platform="slack", channel="C1")] == [first.id]
    assert [h.id for h in await store.history(limit=1)] == [second.id]
    assert await store.history(platform="discord", channel="C1") == []
    assert (await store.get_debate(second.id)).turns == ()  # type: ignore[union-attr]


async def test_unknown_model_cost_is_unknown(store: DebateLog) -> None:
    spec = make_spec()
    await store.create_debate(spec)
    other = make_spec()
    await store.create_debate(other)
    for debate in (spec, other):
        await store.add_turn(make_turn(debate, 1, "A", "x", input_tokens=10, output_tokens=10))
        await store.add_turn(make_turn(debate, 1, "B", "y").model_copy(update={"model": "acme:mystery-1"}))
    await store.add_turn(make_turn(spec, 2, "B", "z", input_tokens=5).model_copy(update={"model": "acme:mystery-1"}))
    for debate in (spec, other):
        await store.finish_debate(debate.id, Outcome(status="completed"))
    assert (await store.get_debate(other.id)).cost_usd is not None  # type: ignore[union-attr]  # no tokens unpriced
    assert (await store.get_debate(spec.id)).cost_usd is None  # type: ignore[union-attr]
    assert estimate_cost("ollama:qwen3", 10**6, 10**6) == 0.0
    assert estimate_cost("cli:claude", 10**6, 10**6) == 0.0
    assert estimate_cost("openrouter:anthropic/claude-sonnet-4.5", 10**6, 0) == 3.0
    assert estimate_cost("anthropic:claude-haiku-4-5-20251001", 0, 10**6) == 5.0
    assert estimate_cost("openai:gpt-5-mini", 10**6, 10**6) == pytest.approx(2.25)
    assert estimate_cost("openai:gpt-9000", 1, 1) is None


# -- the store sink -----------------------------------------------------------------------------


async def test_store_sink_persists_a_scripted_debate_and_ignores_deltas(store: DebateLog) -> None:
    spec = make_spec("Sink topic")
    sink = StoreSink(store)
    turns = [
        make_turn(spec, 1, "A", "opening"),
        make_turn(spec, 1, "B", "", status="failed", error="timeout after 240 s"),
        make_turn(spec, 2, "A", "defense"),
    ]
    events: list[EventBase] = [DebateStarted(debate_id=spec.id, spec=spec)]
    for turn in turns:
        events.append(RoundStarted(debate_id=spec.id, round=turn.round, total=2))
        events.append(TurnStarted(debate_id=spec.id, round=turn.round, seat=turn.seat, role=turn.role,
                                  kind=turn.kind, model=turn.model))  # fmt: skip
        events += [
            TextDelta(debate_id=spec.id, round=turn.round, seat=turn.seat, kind=turn.kind, delta="tok ")
            for _ in range(334)
        ]
        events.append(TurnCompleted(debate_id=spec.id, turn=turn) if turn.status == "ok"
                      else TurnFailed(debate_id=spec.id, turn=turn))  # fmt: skip
        events.append(RoundCompleted(debate_id=spec.id, round=turn.round, total=2))
    events += [
        Notice(debate_id=spec.id, level="warning", text="Challenger failed; proposer uncontested."),
        VerdictReached(debate_id=spec.id, verdict=Verdict(winner="A", recommendation="Ship it")),
        DebateFinished(debate_id=spec.id, outcome=Outcome(status="completed", rounds_completed=2)),
    ]
    assert sum(isinstance(e, TextDelta) for e in events) >= 1000

    writes = 0
    real_write, real_one = store._write, store._write_one_statement

    inside = False  # a one-statement write that is a transaction on this log calls `_write`: counted once

    def counting(real):  # type: ignore[no-untyped-def]
        async def write(fn):  # type: ignore[no-untyped-def]
            nonlocal writes, inside
            if inside:
                return await real(fn)
            writes += 1
            inside = True
            try:
                return await real(fn)
            finally:
                inside = False
        return write

    store._write = counting(real_write)  # type: ignore[method-assign]
    store._write_one_statement = counting(real_one)  # type: ignore[method-assign]
    for event in events:
        await sink.handle(event)
    store._write, store._write_one_statement = real_write, real_one  # type: ignore[method-assign]

    record = await store.get_debate(spec.id)
    assert record is not None
    assert len(record.turns) == len(turns) and writes == 1 + len(turns) + 3
    assert [(t.round, t.seat, t.status) for t in record.turns] == [(1, "A", "ok"), (1, "B", "failed"), (2, "A", "ok")]
    assert record.turns[1].error == "timeout after 240 s"
    assert record.status == "completed" and record.verdict is not None and record.verdict.winner == "A"
    assert record.notices[0].level == "warning"
    # a turn is in the log by the time the sink returns: later sinks may rely on it
    last = turns[-1]
    assert any(t.text == last.text and t.round == last.round for t in record.turns)


async def test_a_request_key_is_claimed_once_across_processes_sharing_the_log(log_backend: LogBackend) -> None:
    async with log_backend.open() as first, log_backend.open() as second:
        claims = await asyncio.gather(*(s.claim_request("slack:trigger-1") for s in (first, second, first)))
        assert sorted(claims) == [False, False, True]
        assert await second.claim_request("slack:trigger-2") is True
        assert await first.claim_request("slack:trigger-1", keep_s=0.0) is True  # expired keys are forgotten
