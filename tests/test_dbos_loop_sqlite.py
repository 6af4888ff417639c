"""orchestrator/durable/dbos_loop_sqlite.py on a real SQLite file: the loop's connection never waits. A file
another connection holds is `Busy` at once, whether at the first statement of a new connection, a read or a
write, with nothing written; once it is free, the same connection reads and writes. `when_free` tries again
while the loop runs on, and gives up with Busy."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import sqlalchemy as sa

from orchestrator.durable.dbos_loop_sqlite import RETRY_WAITS_S, Busy, LoopSQLite, file_of, when_free


def loop_sqlite(path: Path) -> LoopSQLite:
    sys_db: Any = SimpleNamespace(engine=sa.create_engine(f"sqlite:///{path}"))
    return LoopSQLite(sys_db)


def test_only_a_file_gets_a_connection_of_the_loop(tmp_path: Path) -> None:
    def file(url: str) -> str | None:
        sys_db: Any = SimpleNamespace(engine=sa.create_engine(url))
        return file_of(sys_db)

    assert file(f"sqlite:///{tmp_path / 'w.sqlite'}") == str(tmp_path / "w.sqlite")
    assert file("sqlite://") is None and file("sqlite:///:memory:") is None
    assert file("postgresql+psycopg://u@localhost/db") is None


@pytest.fixture
def path(tmp_path: Path) -> Path:
    file = tmp_path / "workflows.sqlite"
    conn = sqlite3.connect(file, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("create table t (v text)")
    conn.close()
    return file


def test_a_file_held_exclusively_is_busy_at_once_even_for_a_new_connection(path: Path) -> None:
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("PRAGMA locking_mode=EXCLUSIVE")
    other.execute("BEGIN IMMEDIATE")
    other.execute("insert into t values ('theirs')")
    other.execute("COMMIT")  # in exclusive locking mode the lock stays until the connection closes
    ours, writer = loop_sqlite(path), loop_sqlite(path)
    with pytest.raises(Busy):
        ours.rows("select v from t", ())
    with pytest.raises(Busy), writer.writing() as conn:  # the first statement of a new connection
        conn.execute("insert into t values ('ours')")
    other.close()
    assert ours.rows("select v from t", ()) == [("theirs",)]
    with writer.writing() as conn:
        conn.execute("insert into t values ('ours')")
    assert ours.rows("select v from t", ()) == [("theirs",), ("ours",)]
    ours.close()
    writer.close()


def test_a_write_while_another_connection_writes_is_busy_and_writes_nothing(path: Path) -> None:
    ours = loop_sqlite(path)
    assert ours.rows("select count(*) from t", ()) == [(0,)]
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(Busy), ours.writing() as conn:
        conn.execute("insert into t values ('ours')")
    assert ours.rows("select count(*) from t", ()) == [(0,)]  # WAL: the read is not kept waiting
    other.execute("COMMIT")
    with ours.writing() as conn:
        conn.execute("insert into t values ('ours')")
    with pytest.raises(ValueError), ours.writing() as conn:  # an error inside: rolled back
        conn.execute("insert into t values ('rolled back')")
        raise ValueError("no")
    assert other.execute("select v from t").fetchall() == [("ours",)]
    other.close()
    ours.close()


def _write_ours(ours: LoopSQLite) -> str:
    with ours.writing() as conn:
        conn.execute("insert into t values ('ours')")
    return "written"


async def test_a_write_that_finds_the_file_taken_is_tried_again_while_the_loop_runs_on(path: Path) -> None:
    """`when_free`: the other connection commits while ours waits between tries; other tasks ran meanwhile."""
    ours = loop_sqlite(path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    ticks = 0

    async def meanwhile() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            if ticks == 3:
                other.execute("COMMIT")  # the lock goes after a few turns of the loop
            await asyncio.sleep(0)

    running = asyncio.create_task(meanwhile())
    try:
        assert await when_free(lambda: _write_ours(ours)) == "written"
    finally:
        running.cancel()
    assert ticks >= 3
    assert other.execute("select v from t").fetchall() == [("ours",)]
    other.close()
    ours.close()


async def test_a_file_taken_through_every_try_is_busy_with_nothing_written(path: Path) -> None:
    ours = loop_sqlite(path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    tries = 0

    def attempt() -> str:
        nonlocal tries
        tries += 1
        return _write_ours(ours)

    with pytest.raises(Busy):
        await when_free(attempt)
    assert tries == len(RETRY_WAITS_S) + 1
    other.execute("ROLLBACK")
    assert ours.rows("select count(*) from t", ()) == [(0,)]
    other.close()
    ours.close()
