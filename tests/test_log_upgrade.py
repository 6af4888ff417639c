"""The upgrade from a real log written by the code before the log was unified, on both databases.

tests/data/log_today.db is a SQLite file and tests/data/log_today_postgres.sql a `pg_dump` of a
Postgres log, both written through the public `DebateLog` by that code (three debates with turns,
notices, verdicts, votes, messages, a continuation with its facts, an audience note, channel defaults,
a request key and a renderer lease). Each is copied, opened by today's log (which brings its schema
up to date), read back in full, searched and written to.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import psycopg
import pytest

from orchestrator.log import Scope, StoreError
from orchestrator.log.schema import migration_names
from orchestrator.models import DebateSpec, Seat, Turn
from tests.log_backends import LogBackend
from tests.postgres_server import PostgresServer, _clean_env

DATA = Path(__file__).parent / "data"
FOREVER_S = 100 * 365 * 86_400.0  # a request key's keep: the fixture's stays claimed whatever today's date


def restore(server: PostgresServer, url: str) -> None:
    """Load the dump into the database at `url` (its functions resolve names through the search path,
    which pg_dump's own header empties)."""
    dump = (DATA / "log_today_postgres.sql").read_text()
    dump = dump.replace("SELECT pg_catalog.set_config('search_path', '', false);", "")
    database = url.rsplit("/", 1)[1]
    done = subprocess.run([str(server.install / "bin" / "psql"), "-v", "ON_ERROR_STOP=1", "-q", "-h", "127.0.0.1",
                           "-p", str(server.port), "-U", "postgres", "-d", database], input=dump, text=True,
                          capture_output=True, env=_clean_env(), check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_log(request: pytest.FixtureRequest, tmp_path: Path) -> LogBackend:
    if request.param == "sqlite":
        shutil.copy(DATA / "log_today.db", tmp_path / "debates.db")
        return LogBackend("sqlite", str(tmp_path / "debates.db"))
    url = request.getfixturevalue("postgres_url")
    restore(request.getfixturevalue("postgres_server"), url)
    return LogBackend("postgres", url)


def recorded(backend: LogBackend) -> list[str]:
    table = "_sqlite_migrations" if backend.name == "sqlite" else "debate_log_migrations"
    return [r[0] for r in backend.sql(f"select name from {table} order by id")]


async def test_a_log_written_before_upgrades_and_reads_writes_and_searches_as_before(old_log: LogBackend) -> None:
    # later migrations (m012 the budgets' model_calls, m013 page keys, m014 jury columns) are missing: a
    # reader says to upgrade rather than misread, then reads once a writer has upgraded it
    with pytest.raises(StoreError, match="uses an older schema; run `debate serve` or `debate run` once"):
        async with old_log.open(readonly=True) as reader:
            await reader.history()
    async with old_log.open() as log:
        first = await log.get_debate("today000")
        assert first is not None and first.status == "running" and first.segment == 2
        assert [(t.round, t.seat) for t in first.turns] == [(1, "A"), (1, "B"), (2, "A"), (2, "B")]
        assert [v.recommendation for v in first.verdicts] == ["Adopt Rust slowly"]
        assert [n.text for n in first.interjections] == ["new facts", "mind the team"]
        assert [n.text for n in first.notices] == ["a seat was slow"]
        assert (await log.tally("today000")).counts == {"side:B": 1}
        assert (await log.messages("today000"))["root"].final
        assert (await log.channel_defaults("slack", "T1", "C1")).judge == "openai:gpt-5"
        assert not await log.claim_request("slack:req:1", keep_s=FOREVER_S)  # claimed when the fixture was made
        assert await log.claim_workspaces("front-2", "slack", ["T1"], 60.0) == []
        assert {h.debate_id for h in await log.search("borrow checker")} == {"today000", "today001", "today002"}
        assert [h.debate_id for h in await log.search("débat")] == ["today001"]
        # the private Discord channel's debate stays inside it
        guild = Scope(platform="discord", workspace="G1", channel="elsewhere")
        assert await log.history(scope=guild) == []
        assert [s.id for s in await log.history(scope=guild.model_copy(update={"channel": "D9"}))] == ["today001"]
        seats = (Seat(label="A", role="proposer", model="openai:gpt-5"),
                 Seat(label="B", role="challenger", model="openai:gpt-5"))
        spec = DebateSpec(id="after001", topic="Written after the upgrade", seats=seats, judge="openai:gpt-5")
        await log.create_debate(spec)
        turn_id = await log.add_turn(Turn(debate_id=spec.id, round=1, seat="A", role="proposer", kind="opening",
                                          model="openai:gpt-5", text="zanzibar"))
        assert turn_id > 12  # after the old log's twelve turns
        assert [h.debate_id for h in await log.search("zanzibar")] == ["after001"]
    assert recorded(old_log) == migration_names()
    # a reader of the upgraded log (before it, a reader refuses a log missing a later additive migration)
    async with old_log.open(readonly=True) as reader:
        assert [s.id for s in await reader.history()] == ["after001", "today002", "today001", "today000"]
    if old_log.name == "sqlite":
        with sqlite3.connect(old_log.target) as conn:
            assert conn.execute("pragma integrity_check").fetchone() == ("ok",)
    else:
        with psycopg.connect(old_log.target) as conn:  # the old numbering is gone, none ran twice
            assert conn.execute("select count(*) from debates").fetchone() == (4,)
