"""The log's tenancy model on both backends (real SQLite files, a real Postgres): typed platform columns,
reads scoped inside the query (before any LIMIT or ranking window), store-first events; and, for the
SQLite file, read-only opening and private files."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlite_utils import Database

from orchestrator.debate.engine import Engine
from orchestrator.debate.jobs import DebateJobs
from orchestrator.events import (
    LOG_DISK_FULL,
    DebateFailed,
    DebateStarted,
    EventBase,
    EventBus,
    LogWriteFailed,
    Notice,
    TurnCompleted,
)
from orchestrator.log import (
    AmbiguousIdError,
    DebateLog,
    DebateNotFoundError,
    ReadOnlyLogError,
    Scope,
    Store,
    StoreError,
    StoreSink,
)
from orchestrator.log.records import to_iso
from orchestrator.log.schema import migration_names, migrations
from orchestrator.log.search import SEARCH_RECENT_MATCHES
from orchestrator.models import DebateSpec, Seat, Turn, Verdict, Vote
from orchestrator.providers import ProviderRegistry
from tests.debate_harness import CollectingSink, settings_for
from tests.fakes.llm_server import FakeLLMServer
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:model-a"),
         Seat(label="B", role="challenger", model="openai:model-b"))


def spec(id: str, topic: str, platform: str = "slack", workspace: str | None = "T1", channel: str = "C1",
         private: bool = False) -> DebateSpec:
    return DebateSpec(id=id, topic=topic, seats=SEATS, judge="openai:judge", platform=platform, workspace=workspace,
                      channel=channel, channel_private=private, thread=f"{id}-root")


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


PUBLIC = spec("aaaa0001", "Kafka in the public channel")
PRIVATE = spec("aaaa0002", "Kafka in the private channel", channel="G2", private=True)
DM = spec("aaaa0003", "Kafka in a direct message", channel="D7", private=True)
OTHER_TEAM = spec("aaaa0004", "Kafka in another workspace", workspace="T2", channel="C9")
DISCORD = spec("aaaa0005", "Kafka on Discord", platform="discord", workspace="G100", channel="555")
CLI = DebateSpec(id="aaaa0006", topic="Kafka from the terminal", seats=SEATS, judge="openai:judge")
ALL = (PUBLIC, PRIVATE, DM, OTHER_TEAM, DISCORD, CLI)

IN_PUBLIC = Scope(platform="slack", workspace="T1", channel="C1")
IN_PRIVATE = Scope(platform="slack", workspace="T1", channel="G2", channel_private=True)
IN_OTHER_PUBLIC = Scope(platform="slack", workspace="T1", channel="C5")
IN_DISCORD = Scope(platform="discord", workspace="G100", channel="556")


async def fill(store: DebateLog) -> None:
    for at, s in enumerate(ALL):
        await store.create_debate(s, at=1_700_000_000.0 + at)
        await store.set_verdict(s.id, Verdict(winner="A", recommendation=f"Adopt Kafka ({s.id})"))
        await store.set_message(s.id, "root", s.platform, s.channel, f"{s.id}-root")
        await store.set_message(s.id, "verdict", s.platform, s.channel, f"{s.id}-verdict")


def ids(rows: list) -> set[str]:
    return {getattr(r, "id", None) or r.debate_id for r in rows}


async def test_every_read_shows_a_chat_only_what_its_place_may_see(store: DebateLog) -> None:
    await fill(store)
    expected = {
        IN_PUBLIC: {PUBLIC.id},  # public channels of the workspace only
        IN_PRIVATE: {PUBLIC.id, PRIVATE.id},  # plus the private channel it is asked from
        IN_OTHER_PUBLIC: {PUBLIC.id},
        Scope(platform="slack", workspace="T1", channel="D7", channel_private=True): {PUBLIC.id, DM.id},
        Scope(platform="slack", workspace="T2", channel="C1"): {OTHER_TEAM.id},  # same channel id, other team
        IN_DISCORD: {DISCORD.id},
        Scope(platform="discord", workspace=None, channel="777"): set(),  # a DM outside any guild
    }
    for scope, visible in expected.items():
        assert ids(await store.history(50, scope)) == visible, scope
        assert ids(await store.search("kafka", 50, scope)) == visible, scope
        assert ids(await store.search("adopt", 50, scope)) == visible, scope  # recommendations
        for s in ALL:
            record = await store.get_debate(s.id, scope)
            assert (record is not None) == (s.id in visible), (scope, s.id)
            assert ((await store.get_debate(s.id, scope, turns=False)) is not None) == (s.id in visible)
            found = await store.find_by_message(s.platform, s.channel or "", f"{s.id}-verdict", scope)
            assert (found == s.id) == (s.id in visible), (scope, s.id)
    assert ids(await store.history(50)) == {s.id for s in ALL}  # the operator sees everything
    assert ids(await store.search("kafka", 50)) == {s.id for s in ALL}


async def test_an_ambiguous_prefix_lists_only_visible_ids_and_hidden_ones_are_not_found(store: DebateLog) -> None:
    await fill(store)
    with pytest.raises(AmbiguousIdError) as info:
        await store.get_debate("aaaa", IN_PRIVATE)
    assert sorted(info.value.matches) == [PUBLIC.id, PRIVATE.id]
    assert OTHER_TEAM.id not in str(info.value) and DM.id not in str(info.value)
    assert (await store.get_debate("aaaa", IN_DISCORD)).id == DISCORD.id  # type: ignore[union-attr]
    assert await store.get_debate(PRIVATE.id, IN_PUBLIC) is None
    assert await store.get_debate("aaaa0002", IN_OTHER_PUBLIC) is None
    with pytest.raises(DebateNotFoundError):
        await store.record_vote(Vote(debate_id=PRIVATE.id, user="U1", choice="agree"), IN_PUBLIC)
    tally = await store.record_vote(Vote(debate_id=PRIVATE.id, user="U1", choice="agree"), IN_PRIVATE)
    assert tally.total == 1


async def test_the_quote_shortcut_finds_its_debate_by_any_message_of_it(store: DebateLog) -> None:
    await fill(store)
    await store.set_message(PUBLIC.id, "turn:1:A", "slack", "C1", "1700000000.5")
    assert await store.find_by_message("slack", "C1", "1700000000.5", IN_PUBLIC) == PUBLIC.id
    assert await store.find_by_message("slack", "C1", f"{PUBLIC.id}-root") == PUBLIC.id  # the thread it roots
    assert await store.find_by_message("slack", "C2", "1700000000.5") is None  # same ts, another channel
    assert await store.find_by_message("discord", "C1", "1700000000.5") is None


async def test_scope_is_applied_before_the_limit_and_before_the_ranking_window(
    store: DebateLog, log_backend: LogBackend
) -> None:
    mine = spec("b0000001", "Tail latency in our ingest service", workspace="T1", channel="C1")
    await store.create_debate(mine, at=1_600_000_000.0)
    crowd = SEARCH_RECENT_MATCHES + 200  # newer matches from another workspace than the ranking window holds

    log_backend.insert("debates", (
        {"id": f"c{i:07d}", "topic": f"Tail latency for team two, take {i}", "format": "challenge",
         "status": "completed", "created_at": to_iso(1_700_000_000.0 + i), "platform": "slack",
         "workspace": "T2", "channel": "C1", "channel_private": 0}
        for i in range(crowd)
    ))
    assert [h.debate_id for h in await store.search("latency", 5, IN_PUBLIC)] == [mine.id]
    assert [h.id for h in await store.history(5, IN_PUBLIC)] == [mine.id]
    assert len(await store.search("latency", 5)) == 5 and mine.id not in ids(await store.search("latency", 5))


async def test_the_team_rows_become_a_typed_workspace(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = Database(path)
    migrations.apply(db, stop_before=next(n for n in migration_names() if n.startswith("m005")))
    db["debates"].insert({"id": "old00001", "topic": "legacy", "format": "challenge", "status": "completed",
                          "created_at": to_iso(1.0), "platform": "slack", "channel": "C1"})
    db["messages"].insert_all([
        {"debate_id": "old00001", "key": "team", "platform": "slack", "channel": "C1", "message_id": "T1"},
        {"debate_id": "old00001", "key": "root", "platform": "slack", "channel": "C1", "message_id": "1.0"},
    ])
    db.close()
    async with Store(path) as store:
        record = await store.get_debate("old00001")
        assert record is not None and (record.workspace, record.channel_private, record.runner) == ("T1", None, None)
        # privacy unknown counts as private: only its own channel recalls it
        assert await store.get_debate("old00001", IN_PUBLIC) is not None
        assert await store.get_debate("old00001", IN_OTHER_PUBLIC) is None
    keys = [r[0] for r in sqlite3.connect(path).execute("select key from messages").fetchall()]
    assert keys == ["root"]


# -- opening ------------------------------------------------------------------------------------


async def test_a_reader_never_writes_migrates_or_creates(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-yet.db"
    async with Store(missing, readonly=True) as reader:
        assert await reader.history() == []
    assert not missing.exists()

    path = tmp_path / "log.db"
    async with Store(path) as writer:
        await writer.create_debate(PUBLIC)
        async with Store(path, readonly=True) as reader:
            assert (await reader.get_debate(PUBLIC.id)).status == "running"  # type: ignore[union-attr]
            with pytest.raises(ReadOnlyLogError):
                await reader.record_vote(Vote(debate_id=PUBLIC.id, user="U", choice="agree"))
            await writer.create_debate(PRIVATE)  # the writer goes on; the reader sees it
            assert ids(await reader.history()) == {PUBLIC.id, PRIVATE.id}

    old = tmp_path / "old.db"
    db = Database(old)
    last = migration_names("sqlite")[-1]
    migrations.apply(db, stop_before=last)
    db.close()
    with pytest.raises(StoreError, match="debate serve"):
        await Store(old, readonly=True).start()
    # every migration before the last is recorded (one that does nothing on SQLite too), the last is not
    last = migration_names("sqlite")[-1]
    assert [r[0] for r in sqlite3.connect(old).execute("select name from _sqlite_migrations")] == \
        migration_names()[:migration_names().index(last)]


def file_modes(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}


async def test_the_log_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        async with Store(tmp_path / "log.db") as store:
            await store.create_debate(PUBLIC)
            modes = file_modes(tmp_path)
    finally:
        os.umask(previous)
    assert set(modes) >= {"log.db", "log.db-wal", "log.db-shm"}
    assert set(modes.values()) == {0o600}, modes


# -- store first --------------------------------------------------------------------------------


async def test_an_event_the_log_could_not_keep_reaches_no_platform(store: DebateLog, log_backend: LogBackend
                                                                  ) -> None:
    platform = CollectingSink()
    bus = EventBus([platform], log=StoreSink(store))
    s = spec("d0000001", "Store first")
    await bus.emit(DebateStarted(debate_id=s.id, spec=s))
    log_backend.fail_turn_writes()
    turn = Turn(debate_id=s.id, round=1, seat="A", role="proposer", kind="opening", model="openai:model-a",
                text="This turn never reached the log.", input_tokens=10, output_tokens=20)
    with pytest.raises(LogWriteFailed):
        await bus.emit(TurnCompleted(debate_id=s.id, turn=turn))
    await bus.emit(Notice(debate_id=s.id, text="after the failure"))
    kinds: list[type[EventBase]] = [type(e) for e in platform.events]
    assert kinds == [DebateStarted, DebateFailed]
    failed = platform.events[-1]
    assert isinstance(failed, DebateFailed) and failed.outcome.error == LOG_DISK_FULL
    record = await store.get_debate(s.id)
    assert record is not None and (record.status, record.error) == ("failed", LOG_DISK_FULL)
    assert record.turns == () and record.notices == ()


async def test_a_debate_whose_log_fails_ends_failed_and_says_why(log_backend: LogBackend) -> None:
    async with FakeLLMServer() as srv, log_backend.open() as store:
        script_judge(srv, "A")
        settings = settings_for(srv)
        registry = ProviderRegistry(settings)
        try:
            jobs = DebateJobs(Engine(registry, settings), store)
            log_backend.fail_turn_writes()
            platform = CollectingSink()
            s = DebateSpec(topic="Does store-first hold?", seats=SEATS, judge="openai:judge", rounds=1)
            outcome = await jobs.start(s, [platform])
        finally:
            await registry.aclose()
        assert (outcome.status, outcome.error) == ("failed", LOG_DISK_FULL)
        assert not any(isinstance(e, TurnCompleted) for e in platform.events)
        assert isinstance(platform.events[-1], DebateFailed)
        assert platform.events[-1].outcome.error == LOG_DISK_FULL
        assert len(srv.requests) == 1  # the debate stopped at the first turn it could not log
        record = await store.get_debate(s.id)
        assert record is not None and record.status == "failed"
