"""What only the Postgres log has, against a real server (tests/postgres_server.py): its numbered
migrations, read-only connections the server itself holds to, admission across processes, the
setting that selects it, and `debate migrate-log` both ways. The shared behaviour of both logs is
tested once, parametrized, in test_store.py, test_tenancy_log.py, test_quotas.py and the others."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from pathlib import Path

import psycopg
import pytest

from orchestrator.config import ConfigError, load_settings
from orchestrator.log import ReadOnlyLogError, Store, StoreError, migrate_log, open_log
from orchestrator.log.postgres import PostgresLog
from orchestrator.log.postgres.schema import MIGRATIONS_TABLE, migrate, migration_names
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict, Vote
from tests.log_backends import LogBackend

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parent.parent
SEATS = (Seat(label="A", role="proposer", model="openai:gpt-5"),
         Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-5"))
CONTRACT_COLUMNS = {
    "debates": {"id", "topic", "format", "status", "created_at", "finished_at", "platform", "channel", "thread",
                "requested_by", "rounds_planned", "rounds_completed", "workspace", "channel_private", "runner"},
    "seats": {"debate_id", "label", "role", "provider", "model"},
    "turns": {"debate_id", "round", "seat", "text", "started_at", "duration_ms", "input_tokens", "output_tokens",
              "status", "error"},
    "verdicts": {"debate_id", "winner", "split", "reasoning", "recommendation", "json"},
    "votes": {"debate_id", "user", "choice", "platform", "at"},
    "messages": {"debate_id", "key", "platform", "channel", "message_id", "final"},
}


def spec(topic: str, **kw: object) -> DebateSpec:
    return DebateSpec(topic=topic, seats=SEATS, judge="openai:gpt-5", **kw)  # type: ignore[arg-type]


def columns(url: str, table: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("select column_name from information_schema.columns where table_name = %s", [table])
        return {r[0] for r in rows.fetchall()}


# -- schema -------------------------------------------------------------------------------------


async def test_migrations_from_empty_in_order_once_even_when_two_processes_start_together(postgres_url: str) -> None:
    first, second = PostgresLog(postgres_url), PostgresLog(postgres_url)
    await asyncio.gather(first.start(), second.start())  # both migrate an empty database at once
    await first.close()
    await second.close()
    async with PostgresLog(postgres_url) as again:
        await again.create_debate(spec("reopened"))
    with psycopg.connect(postgres_url) as conn:
        names = [r[0] for r in conn.execute(f"select name from {MIGRATIONS_TABLE} order by id").fetchall()]
        indexes = {r[0] for r in conn.execute(
            "select indexname from pg_indexes where schemaname = 'public' and indexdef like '%USING gin%'")}
    assert names == migration_names() == sorted(migration_names())
    for table, expected in CONTRACT_COLUMNS.items():
        assert expected <= columns(postgres_url, table), table
    assert indexes == {"debates_fts", "turns_fts", "verdicts_fts", "sources_fts"}


async def test_migrates_forward_and_indexes_rows_written_before_search_existed(postgres_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await migrate(conn, stop_before="m003_full_text_search")
        await conn.execute("insert into debates (id, topic, format, status, created_at)"
                           " values ('old00001', 'legacy topic about tabs', 'challenge', 'completed', now())")
    async with PostgresLog(postgres_url) as log:
        assert [h.debate_id for h in await log.search("tabs")] == ["old00001"]


# -- reading only -------------------------------------------------------------------------------


async def test_a_reader_never_writes_or_migrates_and_the_server_holds_it_to_that(postgres_url: str) -> None:
    async with PostgresLog(postgres_url, readonly=True) as reader:  # nothing there yet: an empty log
        assert await reader.history() == [] and await reader.search("kafka") == []
        assert await reader.get_debate("abcd1234") is None
    assert columns(postgres_url, MIGRATIONS_TABLE) == set()  # and nothing was created

    public = spec("Kafka everywhere", platform="slack", workspace="T1", channel="C1")
    async with PostgresLog(postgres_url) as writer, PostgresLog(postgres_url, readonly=True) as reader:
        await writer.create_debate(public)
        assert (await reader.get_debate(public.id)).status == "running"  # type: ignore[union-attr]
        with pytest.raises(ReadOnlyLogError):
            await reader.record_vote(Vote(debate_id=public.id, user="U", choice="agree"))
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # the server refuses it too
            await reader._run(lambda c: c.values("delete from debates"))
        assert [h.debate_id for h in await reader.search("kafka")] == [public.id]


async def test_a_reader_refuses_an_older_schema_and_a_bad_url_names_the_setting(
    postgres_url: str, unused_tcp_port: int
) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await migrate(conn, stop_before=migration_names()[-1])
    with pytest.raises(StoreError, match="debate serve"):
        await PostgresLog(postgres_url, readonly=True).start()
    url = f"postgresql://debate:hunter2@127.0.0.1:{unused_tcp_port}/nothing?connect_timeout=2"
    with pytest.raises(StoreError, match="DEBATE_DATABASE_URL") as raised:
        await PostgresLog(url).start()
    assert "hunter2" not in str(raised.value) and "***" in str(raised.value)


# -- the setting --------------------------------------------------------------------------------


def test_debate_database_url_selects_postgres_and_must_be_a_postgres_url(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, postgres_url: str
) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("DEBATE_DATABASE_URL", postgres_url)
    settings = load_settings()
    assert isinstance(open_log(settings.debate_database_url or settings.debate_db), PostgresLog)
    monkeypatch.delenv("DEBATE_DATABASE_URL")
    assert isinstance(open_log(load_settings().debate_database_url or load_settings().debate_db), Store)
    monkeypatch.setenv("DEBATE_DATABASE_URL", "mysql://db/debates")
    with pytest.raises(ConfigError, match="DEBATE_DATABASE_URL"):
        load_settings()


# -- migrate-log --------------------------------------------------------------------------------


async def fill(log_backend: LogBackend) -> tuple[DebateSpec, DebateSpec]:
    done = spec("Monorepo or polyrepo?", platform="slack", workspace="T1", channel="C1", channel_private=True,
                thread="1700.1", requested_by="U1")
    live = spec("Kafka or NATS?", platform="discord", workspace="G1", channel="55")
    async with log_backend.open(runner="serve:a") as log:
        await log.create_debate(done, at=1_700_000_000.25)
        await log.create_debate(live, at=1_700_000_100.5)
        for round, seat in ((1, "A"), (1, "B"), (2, "A")):
            await log.add_turn(Turn(debate_id=done.id, round=round, seat=seat, role=done.seat(seat).role,
                                    kind="opening", model=done.seat(seat).model, text=f"bazel caching {round}{seat}",
                                    started_at=1_700_000_001.0, input_tokens=10, output_tokens=5))
        await log.add_notice(done.id, "warning", "B was slow.", at=1_700_000_002.0)
        await log.set_verdict(done.id, Verdict(winner="A", split=True, recommendation="Adopt remote caching"))
        await log.record_vote(Vote(debate_id=done.id, user="U7", choice="side:A", platform="slack", at=5.0))
        await log.set_message(done.id, "root", "slack", "C1", "1700.1", final=True)
        await log.set_message(live.id, "root", "discord", "55", "9001")
        await log.finish_debate(done.id, Outcome(status="completed", rounds_completed=2))
    return done, live


async def assert_same_log(source: LogBackend, target: LogBackend, ids: list[str]) -> None:
    async with source.open(readonly=True) as a, target.open(readonly=True) as b:
        for debate_id in ids:
            assert await a.get_debate(debate_id) == await b.get_debate(debate_id)
            assert await a.messages(debate_id) == await b.messages(debate_id)
        assert [h.debate_id for h in await b.search("bazel")] == [ids[0]]
        assert [h.where for h in await b.search("remote caching")] == ["recommendation"]
        assert await b.threads_to_resume("discord", "root") == [ids[1]]


async def test_migrate_log_copies_sqlite_into_postgres_and_back_idempotently(
    tmp_path: Path, postgres_url: str
) -> None:
    sqlite = LogBackend("sqlite", str(tmp_path / "debates.db"))
    postgres = LogBackend("postgres", postgres_url)
    done, live = await fill(sqlite)

    copied = await migrate_log(Path(sqlite.target), postgres.target)
    assert copied.tables == {"debates": 2, "seats": 4, "turns": 3, "verdicts": 1, "votes": 1, "messages": 2,
                             "notices": 1, "interjections": 0, "channel_settings": 0, "continuations": 0,
                             "model_calls": 0, "sources": 0,
                             "usage_days": 0, "purged_debates": 0, "uninstalls": 0,
                             "workspace_orgs": 0, "audit": 0}
    await migrate_log(Path(sqlite.target), postgres.target)  # again: nothing doubles
    await assert_same_log(sqlite, postgres, [done.id, live.id])
    assert postgres.sql("select count(*) from turns")[0][0] == 3
    async with postgres.open() as log:  # new rows after the copy get fresh ids
        turn = Turn(debate_id=live.id, round=1, seat="A", role="proposer", kind="opening", model="m", text="new")
        assert await log.add_turn(turn) > max(t.id for t in (await log.get_debate(done.id)).turns)  # type: ignore[union-attr]

    back = LogBackend("sqlite", str(tmp_path / "back.db"))
    await migrate_log(postgres.target, Path(back.target))
    await migrate_log(postgres.target, Path(back.target))
    await assert_same_log(postgres, back, [done.id, live.id])
    with sqlite3.connect(back.target) as conn:
        assert conn.execute("select count(*) from turns").fetchone()[0] == 4


async def test_the_migrate_log_command_moves_the_configured_log(tmp_path: Path, postgres_url: str) -> None:
    sqlite = LogBackend("sqlite", str(tmp_path / "debates.db"))
    done, live = await fill(sqlite)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBATE_")}
    env |= {"PYTHONPATH": str(ROOT), "DEBATE_DB": sqlite.target}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots.cli", "migrate-log", "--to", postgres_url, cwd=tmp_path, env=env,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert "2 debates" in err.decode() and "3 turns" in err.decode()
    await assert_same_log(sqlite, LogBackend("postgres", postgres_url), [done.id, live.id])
