"""The team in the loop, in the log, on both backends (a real SQLite file, a real Postgres database):
audience notes and their per-round queue, numbered verdicts, continuations, rematch links within a
scope, channel defaults; the migration from a log written before them; their export and their copy
between backends (`debate migrate-log`)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from sqlite_utils import Database

from orchestrator.events import VerdictReached
from orchestrator.export import from_json, to_json, to_markdown
from orchestrator.log import (
    ContinuationRefused,
    DebateLog,
    DebateNotFoundError,
    InterjectionRefused,
    Scope,
    StoreSink,
    migrate_log,
)
from orchestrator.log.postgres.schema import migrate
from orchestrator.log.schema import migrations
from orchestrator.models import (
    MAX_CONTINUATIONS,
    MAX_INTERJECTIONS_PER_ROUND,
    ChannelDefaults,
    DebateSpec,
    Interjection,
    Outcome,
    Seat,
    Turn,
    Verdict,
    Vote,
)
from orchestrator.quotas import Quota
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:model-a"),
         Seat(label="B", role="challenger", model="anthropic:model-b"))
T0 = 1_700_000_000.0


def spec(id: str, topic: str = "Kafka or NATS for the event bus?", *, seats: tuple[Seat, ...] = SEATS,
         channel: str = "C1", private: bool = False, workspace: str = "T1", **kw: object) -> DebateSpec:
    return DebateSpec(id=id, topic=topic, seats=seats, judge="openai:judge", platform="slack",  # type: ignore[arg-type]
                      workspace=workspace, channel=channel, channel_private=private, **kw)


def note(debate_id: str, text: str, at: float, *, kind: str = "interjection", author: str = "Ada") -> Interjection:
    return Interjection(debate_id=debate_id, author=author, user="U1", platform="slack", kind=kind,  # type: ignore[arg-type]
                        text=text, at=at)


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


async def completed(store: DebateLog, s: DebateSpec, winner: str = "A", at: float = T0) -> None:
    await store.create_debate(s, at=at)
    await store.set_verdict(s.id, Verdict(winner=winner, recommendation=f"Adopt {winner}'s plan"), at=at + 1)
    await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=2), at=at + 2)


# -- audience notes -----------------------------------------------------------------------------


async def test_notes_wait_only_for_a_running_debate_and_at_most_three_at_once(store: DebateLog) -> None:
    with pytest.raises(DebateNotFoundError):
        await store.add_interjection(note("nope0000", "hello", T0), max_waiting=3)
    s = spec("team0001")
    await store.create_debate(s, at=T0)
    notes = [note(s.id, f"p99 is {n}0 ms", T0 + n) for n in range(1, 5)]
    assert [await store.add_interjection(n, max_waiting=MAX_INTERJECTIONS_PER_ROUND) for n in notes[:3]] == [1, 2, 3]
    with pytest.raises(InterjectionRefused, match=rf"^3 audience notes already wait .* debate `{s.id}`; try again"):
        await store.add_interjection(notes[3], max_waiting=MAX_INTERJECTIONS_PER_ROUND)
    assert await store.add_interjection(notes[0], max_waiting=3) == 3  # the same note again: stored once
    assert [n.text for n in await store.interjections(s.id)] == ["p99 is 10 ms", "p99 is 20 ms", "p99 is 30 ms"]

    await store.take_interjections(s.id, 1, 3)  # a round starts: room again
    assert await store.add_interjection(notes[3], max_waiting=3) == 1

    await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=2))
    with pytest.raises(InterjectionRefused, match=rf"^Debate `{s.id}` is not running"):
        await store.add_interjection(note(s.id, "too late", T0 + 9), max_waiting=3)
    # new facts given with `continue` wait on the completed debate, whatever waits already
    facts = note(s.id, "We already run a Kafka cluster.", T0 + 10, kind="facts")
    assert await store.add_interjection(facts, max_waiting=1) == 2


async def test_two_processes_adding_notes_at_once_never_queue_more_than_the_limit(log_backend: LogBackend) -> None:
    s = spec("team0002")
    async with log_backend.open() as first, log_backend.open() as second:
        await first.create_debate(s, at=T0)

        async def add(log: DebateLog, n: int) -> int | None:
            try:
                return await log.add_interjection(note(s.id, f"note {n}", T0 + n), max_waiting=3)
            except InterjectionRefused:
                return None

        results = await asyncio.gather(*(add(first if n % 2 else second, n) for n in range(8)))
        assert sorted(r for r in results if r is not None) == [1, 2, 3]
        assert len(await first.interjections(s.id)) == 3


async def test_a_round_takes_its_notes_once_and_a_step_run_again_gets_the_same_ones(store: DebateLog) -> None:
    s = spec("team0003")
    await store.create_debate(s, at=T0)
    for n in range(1, 6):
        await store.add_interjection(note(s.id, f"note {n}", T0 + n), max_waiting=10)

    first = await store.take_interjections(s.id, 1, 3)
    assert [n.text for n in first] == ["note 1", "note 2", "note 3"] and {n.round for n in first} == {1}
    assert await store.take_interjections(s.id, 1, 3) == first  # the step again: the same notes

    await store.add_interjection(note(s.id, "note 6", T0 + 6), max_waiting=10)
    second = await store.take_interjections(s.id, 2, 3)
    assert [n.text for n in second] == ["note 4", "note 5", "note 6"]
    assert await store.take_interjections(s.id, 2, 3) == second
    assert await store.take_interjections(s.id, 1, 3) == first  # round 1 is not topped up by later notes
    assert await store.take_interjections(s.id, 3, 3) == []

    await store.add_interjection(note(s.id, "note 7", T0 + 7), max_waiting=10)
    await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=3))
    await store.add_interjection(note(s.id, "the facts", T0 + 8, kind="facts"), max_waiting=3)
    third = await store.take_interjections(s.id, 4, 1)  # the continuation's round: facts first
    assert [(n.kind, n.text) for n in third] == [("facts", "the facts")]

    everything = await store.interjections(s.id)
    assert [(n.text, n.round) for n in everything] == [
        ("note 1", 1), ("note 2", 1), ("note 3", 1), ("note 4", 2), ("note 5", 2), ("note 6", 2), ("note 7", None),
        ("the facts", 4)]
    record = await store.get_debate(s.id)
    assert record is not None and list(record.interjections) == everything
    assert everything[0].author == "Ada" and everything[0].user == "U1" and everything[0].at == T0 + 1


# -- verdicts and continuations -----------------------------------------------------------------


async def test_every_verdict_is_kept_by_number_and_reads_use_the_latest(store: DebateLog) -> None:
    s = spec("team0004")
    await completed(store, s, winner="A")
    await store.set_verdict(s.id, Verdict(winner="A", recommendation="Adopt A's plan with remote caching"))  # again
    await store.record_vote(Vote(debate_id=s.id, user="U9", choice="side:A"))
    assert await store.begin_continuation(s.id) == 2
    second = Verdict(winner="B", recommendation="Pick NATS after all", changed=True,
                     change_note="The team already runs NATS.")
    await StoreSink(store).handle(VerdictReached(debate_id=s.id, verdict=second, number=2))
    await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=3))

    record = await store.get_debate(s.id)
    assert record is not None
    assert [v.winner for v in record.verdicts] == ["A", "B"] and record.verdict == second
    assert record.verdicts[0].recommendation == "Adopt A's plan with remote caching"
    (line,) = await store.history()
    assert (line.winner, line.winner_model, line.recommendation, line.segment) == (
        "B", "anthropic:model-b", "Pick NATS after all", 2)
    agreement = await store.judge_agreement()
    assert (agreement.debates, agreement.disagreed) == (1, 1)  # the team sided with A; the latest verdict says B
    assert [h.where for h in await store.search("remote caching")] == ["recommendation"]
    assert [h.debate_id for h in await store.search("NATS after all")] == [s.id]


async def test_only_a_completed_debate_with_a_verdict_continues_and_at_most_three_times(store: DebateLog) -> None:
    with pytest.raises(DebateNotFoundError):
        await store.begin_continuation("nope0000")
    running, failed, silent, done = spec("team0005"), spec("team0006"), spec("team0007"), spec("team0008")
    await store.create_debate(running, at=T0)
    with pytest.raises(ContinuationRefused, match=rf"^Debate `{running.id}` is still running"):
        await store.begin_continuation(running.id)
    await store.create_debate(failed, at=T0)
    await store.finish_debate(failed.id, Outcome(status="failed", error="boom"))
    with pytest.raises(ContinuationRefused, match="failed; only a completed debate"):
        await store.begin_continuation(failed.id)
    await store.create_debate(silent, at=T0)
    await store.finish_debate(silent.id, Outcome(status="completed", rounds_completed=2))
    with pytest.raises(ContinuationRefused, match="no verdict"):
        await store.begin_continuation(silent.id)

    await completed(store, done)
    for segment in range(2, 2 + MAX_CONTINUATIONS):
        assert await store.begin_continuation(done.id) == segment
        record = await store.get_debate(done.id)
        assert record is not None and (record.status, record.finished_at, record.segment) == ("running", None, segment)
        with pytest.raises(ContinuationRefused, match="still running"):  # one continuation at a time
            await store.begin_continuation(done.id)
        await store.set_verdict(done.id, Verdict(winner="B", changed=True), number=segment)
        await store.finish_debate(done.id, Outcome(status="completed", rounds_completed=2 + segment - 1))
    with pytest.raises(ContinuationRefused, match=f"continued {MAX_CONTINUATIONS} times"):
        await store.begin_continuation(done.id)
    record = await store.get_debate(done.id)
    assert record is not None and record.segment == 1 + MAX_CONTINUATIONS and len(record.verdicts) == 4


# -- rematches ----------------------------------------------------------------------------------


async def test_rematches_link_both_ways_and_show_only_what_the_scope_sees(store: DebateLog) -> None:
    original = spec("orig0001")
    await completed(store, original)
    other = (Seat(label="A", role="proposer", model="gemini:model-c"),
             Seat(label="B", role="challenger", model="openai:model-a"))
    public = spec("remA0001", seats=other, channel="C2", rematch_of=original.id)
    private = spec("remB0002", channel="G9", private=True, rematch_of=original.id, format="consensus")
    await completed(store, public, winner="B", at=T0 + 10)
    await store.admit(private, Quota.operator(10), at=T0 + 20)  # a start admitted before it posts
    await store.create_debate(private, at=T0 + 20)

    record = await store.get_debate(original.id)
    assert record is not None and [r.id for r in record.rematches] == [public.id, private.id]
    first = record.rematches[0]
    assert (first.rematch_of, first.models, first.winner, first.winner_model, first.recommendation) == (
        original.id, ("gemini:model-c", "openai:model-a"), "B", "openai:model-a", "Adopt B's plan")
    assert (record.rematches[1].winner, record.rematches[1].status, record.rematches[1].format) == (
        None, "running", "consensus")

    in_public = await store.get_debate(original.id, Scope(platform="slack", workspace="T1", channel="C1"))
    assert in_public is not None and [r.id for r in in_public.rematches] == [public.id]
    in_private = await store.get_debate(original.id, Scope(platform="slack", workspace="T1", channel="G9",
                                                           channel_private=True))
    assert in_private is not None and [r.id for r in in_private.rematches] == [public.id, private.id]

    back = await store.get_debate(private.id)
    assert back is not None and back.rematch_of == original.id and back.rematches == ()
    assert {line.id: line.rematch_of for line in await store.history()} == {
        original.id: None, public.id: original.id, private.id: original.id}


# -- channel defaults ---------------------------------------------------------------------------


async def test_channel_defaults_round_trip_per_channel_and_a_dm_without_workspace(
    store: DebateLog, log_backend: LogBackend
) -> None:
    assert await store.channel_defaults("slack", "T1", "C1") == ChannelDefaults()
    chosen = ChannelDefaults(proposer="openai:model-a", format="consensus", rounds=3, effort="high",
                             interjections=False)
    await store.set_channel_defaults("slack", "T1", "C1", chosen, by="U1")
    await store.set_channel_defaults("slack", None, "D7", ChannelDefaults(judge="openai:judge"), by="U2")
    await store.set_channel_defaults("slack", None, "D7", ChannelDefaults(judge="anthropic:model-b"), by="U3")
    assert await store.channel_defaults("slack", "T1", "C1") == chosen
    assert await store.channel_defaults("slack", None, "D7") == ChannelDefaults(judge="anthropic:model-b")
    assert await store.channel_defaults("discord", "T1", "C1") == ChannelDefaults()
    assert await store.channel_defaults("slack", "T2", "C1") == ChannelDefaults()
    assert sorted(log_backend.sql("select channel, updated_by from channel_settings")) == [("C1", "U1"), ("D7", "U3")]


# -- a log written before the team was in the loop ----------------------------------------------


def old_log(log_backend: LogBackend) -> None:
    """A log at the schema before numbered verdicts, with one finished debate and its verdict."""
    if log_backend.name == "sqlite":
        db = Database(log_backend.target)
        migrations.apply(db, stop_before="m008_team_in_the_loop")
        db.close()
    else:
        async def old() -> None:
            async with await psycopg.AsyncConnection.connect(log_backend.target, autocommit=True) as conn:
                await migrate(conn, stop_before="m008_team_in_the_loop")

        asyncio.run(old())
    log_backend.insert("debates", [{"id": "old00001", "topic": "Tabs or spaces?", "format": "challenge",
                                    "status": "completed", "created_at": "2024-01-01T00:00:00+00:00"}])
    verdict = Verdict(winner="A", recommendation="Adopt spaces with an editorconfig")
    log_backend.insert("verdicts", [{"debate_id": "old00001", "winner": "A", "split": 0,
                                     "recommendation": verdict.recommendation, "json": verdict.model_dump_json(),
                                     "at": "2024-01-01T00:05:00+00:00"}])


async def test_a_log_from_before_keeps_its_verdicts_as_number_one_and_still_finds_them(
    log_backend: LogBackend
) -> None:
    await asyncio.to_thread(old_log, log_backend)
    async with log_backend.open() as store:
        record = await store.get_debate("old00001")
        assert record is not None and record.segment == 1 and record.rematch_of is None
        assert [v.recommendation for v in record.verdicts] == ["Adopt spaces with an editorconfig"]
        assert [h.debate_id for h in await store.search("editorconfig")] == ["old00001"]
        assert await store.begin_continuation("old00001") == 2
        await store.set_verdict("old00001", Verdict(winner="B", recommendation="Tabs, for accessibility"), number=2)
        assert [h.where for h in await store.search("accessibility")] == ["recommendation"]
        assert [h.debate_id for h in await store.search("editorconfig")] == ["old00001"]
    assert sorted(log_backend.sql("select number, winner from verdicts")) == [(1, "A"), (2, "B")]
    if log_backend.name == "sqlite":
        with sqlite3.connect(log_backend.target) as conn:
            assert conn.execute("pragma integrity_check").fetchone() == ("ok",)
            conn.execute("insert into verdicts_fts (verdicts_fts) values ('integrity-check')")


# -- export and copy ----------------------------------------------------------------------------


async def continued_debate(store: DebateLog) -> tuple[DebateSpec, DebateSpec]:
    """A debate with an audience note in round 2, a `continue` with facts and a second verdict, and a rematch."""
    s = spec("expo0001", rounds=2)
    await store.create_debate(s, at=T0)
    for round, kind in ((1, "opening"), (2, "defense")):
        if round == 2:
            grace = note(s.id, "Our p99 is 40 ms, not 200.", T0 + 5, author="Grace")
            await store.add_interjection(grace, max_waiting=3)
            await store.take_interjections(s.id, 2, 3)
        for seat in SEATS:
            await store.add_turn(Turn(debate_id=s.id, round=round, seat=seat.label, role=seat.role, kind=kind,
                                      model=seat.model, text=f"{seat.label} argues round {round}", started_at=T0))
    await store.set_verdict(s.id, Verdict(winner="A", recommendation="Use Kafka"), at=T0 + 10)
    await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=2), at=T0 + 11)
    await store.add_interjection(note(s.id, "We already run NATS.", T0 + 12, kind="facts", author="Linus"),
                                 max_waiting=3)
    await store.begin_continuation(s.id)
    await store.take_interjections(s.id, 3, 3)
    for seat in SEATS:
        await store.add_turn(Turn(debate_id=s.id, round=3, seat=seat.label, role=seat.role, kind="continuation",
                                  model=seat.model, text=f"{seat.label} weighs the new facts", started_at=T0 + 13))
    await store.set_verdict(s.id, Verdict(winner="B", recommendation="Use NATS", changed=True,
                                          change_note="An existing NATS cluster removes B's main cost."), number=2)
    await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=3, rounds_planned=3), at=T0 + 20)
    rematch = spec("expo0002", channel="C2", rematch_of=s.id,
                   seats=(Seat(label="A", role="proposer", model="gemini:model-c"), SEATS[1]))
    await completed(store, rematch, winner="A", at=T0 + 30)
    return s, rematch


async def test_the_export_carries_every_verdict_the_audience_notes_and_the_rematches(store: DebateLog) -> None:
    s, rematch = await continued_debate(store)
    record = await store.get_debate(s.id)
    assert record is not None
    data = json.loads(json.dumps(to_json(record)))
    assert data["verdict"]["winner_label"] == "B" and data["verdict"]["changed"] is True  # agentsys: the latest
    assert [(v["number"], v["winner_label"], v["changed"], v["change_note"]) for v in data["verdicts"]] == [
        (1, "A", None, ""), (2, "B", True, "An existing NATS cluster removes B's main cost.")]
    assert [(n["author"], n["kind"], n["round"], n["text"]) for n in data["interjections"]] == [
        ("Grace", "interjection", 2, "Our p99 is 40 ms, not 200."), ("Linus", "facts", 3, "We already run NATS.")]
    assert data["rematch_of"] is None and data["segment"] == 2
    assert [(r["id"], r["format"], r["models"], r["winner"], r["recommendation"]) for r in data["rematches"]] == [
        (rematch.id, "challenge", ["gemini:model-c", "anthropic:model-b"], "A", "Adopt A's plan")]
    assert to_json(from_json(data)) == data

    markdown = to_markdown(record)
    round2, verdict1, round3, verdict2 = (markdown.index(h) for h in (
        "## Round 2 of 2", "## Verdict 1", "## Round 3 (continued)", "## Verdict 2 (after continue) — changed: yes"))
    assert round2 < verdict1 < round3 < verdict2
    grace = markdown.index("**Audience — Grace**\n\n> Our p99 is 40 ms, not 200.")
    assert round2 < grace < markdown.index("A argues round 2")
    assert round3 < markdown.index("**Audience — Linus** (new facts, with continue)") < verdict2
    assert "*Why: An existing NATS cluster removes B's main cost.*" in markdown
    assert f"- `{rematch.id}` · challenge · `gemini:model-c` vs `anthropic:model-b` · winner A" in markdown
    back = await store.get_debate(rematch.id)
    assert back is not None and f"Rematch of `{s.id}`." in to_markdown(back)


@pytest.mark.slow
@pytest.mark.postgres
async def test_migrate_log_copies_notes_verdicts_segments_links_and_channel_defaults(
    tmp_path: Path, postgres_url: str
) -> None:
    sqlite, postgres, back = (LogBackend("sqlite", str(tmp_path / "a.db")), LogBackend("postgres", postgres_url),
                              LogBackend("sqlite", str(tmp_path / "b.db")))
    live = spec("live0001", "Monorepo or polyrepo?", channel="C3")
    async with sqlite.open() as store:
        s, rematch = await continued_debate(store)
        await store.create_debate(live, at=T0 + 40)
        await store.add_interjection(note(live.id, "waiting", T0 + 41), max_waiting=3)  # not taken yet
        await store.set_channel_defaults("slack", "T1", "C1", ChannelDefaults(rounds=3), by="U1")
        await store.set_channel_defaults("slack", None, "D7", ChannelDefaults(interjections=False), by="U2")
    copied = await migrate_log(Path(sqlite.target), postgres.target)
    assert (copied.tables["verdicts"], copied.tables["interjections"], copied.tables["channel_settings"]) == (3, 3, 2)
    await migrate_log(Path(sqlite.target), postgres.target)  # again: nothing doubles
    await migrate_log(postgres.target, Path(back.target))
    for source, target in ((sqlite, postgres), (postgres, back)):
        async with source.open(readonly=True) as a, target.open(readonly=True) as b:
            for debate_id in (s.id, rematch.id, live.id):
                assert await a.get_debate(debate_id) == await b.get_debate(debate_id)
            assert await b.channel_defaults("slack", None, "D7") == ChannelDefaults(interjections=False)
            assert await b.channel_defaults("slack", "T1", "C1") == ChannelDefaults(rounds=3)
            assert [h.debate_id for h in await b.search("weighs")] == [s.id]
    async with postgres.open() as log:  # the copy is a working log: the queue and the numbers go on
        assert await log.add_interjection(note(live.id, "second", T0 + 42), max_waiting=3) == 2
        assert [n.text for n in await log.take_interjections(live.id, 1, 3)] == ["waiting", "second"]
