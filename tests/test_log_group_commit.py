"""The SQLite log's writer thread commits the writes queued together once (orchestrator/log/writer_thread.py):
on a real file, many writes at once share commits, one that fails is undone alone and its caller gets the
error, and every write answered as done is in the file for a reader in another connection."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database

from orchestrator.log import writer_thread
from orchestrator.log.writer_thread import DatabaseThread


class Refused(RuntimeError):
    pass


def insert(n: int):
    def write(db: Database) -> int:
        db.execute("insert into notes_for_test (n) values (?)", [n])
        if n == 7:
            raise Refused(f"write {n} refused after its insert")
        return n

    return write


async def test_writes_queued_together_share_a_commit_and_a_failing_one_is_undone_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    groups: list[int] = []
    run_group = writer_thread._run_group

    def recorded(db: Database, group: list[writer_thread._Job], locks: writer_thread.LockWait
                 ) -> list[tuple[object, BaseException | None]]:
        groups.append(len(group))
        return run_group(db, group, locks)

    monkeypatch.setattr(writer_thread, "_run_group", recorded)
    thread = DatabaseThread(tmp_path / "debates.db")
    await thread.start()
    try:
        await thread.submit(lambda db: db.execute("create table notes_for_test (n integer)"), write=True)
        outcomes = await asyncio.gather(*(thread.submit(insert(n), write=True) for n in range(20)),
                                        return_exceptions=True)
    finally:
        await thread.close()

    assert [o for o in outcomes if not isinstance(o, BaseException)] == [n for n in range(20) if n != 7]
    assert isinstance(outcomes[7], Refused)
    with sqlite3.connect(tmp_path / "debates.db") as other:
        stored = sorted(n for (n,) in other.execute("select n from notes_for_test"))
    assert stored == [n for n in range(20) if n != 7]
    assert sum(groups) == 21 and max(groups) > 1  # fewer commits than writes
