"""The brief in the log, on both backends (a real SQLite file, a real Postgres): its own `sources` table,
written with its debate, searched with the rest, and scoped exactly as its debate is."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.log import DebateLog, Scope
from orchestrator.models import DebateSpec, Seat
from tests.brief_sources import brief_of
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:model-a"),
         Seat(label="B", role="challenger", model="openai:model-b"))
IN_PUBLIC = Scope(platform="slack", workspace="T1", channel="C1")
IN_PRIVATE = Scope(platform="slack", workspace="T1", channel="G2", channel_private=True)


@pytest.fixture
async def store(log_backend: LogBackend) -> AsyncIterator[DebateLog]:
    async with log_backend.open() as s:
        yield s


async def test_sources_are_stored_searched_and_scoped_as_their_debate(store: DebateLog,
                                                                       log_backend: LogBackend) -> None:
    public_brief = await brief_of(("roadmap.md", "# Roadmap\nWe ship the zephyrine cache in March.\n\n"
                                                 "## Risks\nThe zephyrine cache has no owner."))
    private_brief = await brief_of(("salaries.md", "# Pay bands\nThe quillwort band starts at 90k."))
    public = DebateSpec(id="bbbb0001", topic="Ship the cache?", seats=SEATS, judge="openai:j", platform="slack",
                        workspace="T1", channel="C1", brief=public_brief)
    private = DebateSpec(id="bbbb0002", topic="Raise the bands?", seats=SEATS, judge="openai:j",
                         platform="slack", workspace="T1", channel="G2", channel_private=True, brief=private_brief)
    await store.create_debate(public)
    await store.create_debate(private)
    await store.create_debate(private)  # a repeated write (a step run again) keeps one row per source

    rows = log_backend.sql("select debate_id, number, title, kind, origin, size, sha256, sections from sources "
                           "order by debate_id, number")
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
        ("bbbb0001", 1, "Roadmap", "markdown", "roadmap.md"), ("bbbb0002", 1, "Pay bands", "markdown", "salaries.md")]
    source = public_brief.sources[0]
    assert rows[0][5] == source.size and rows[0][6] == source.sha256
    assert [s["anchor"] for s in json.loads(rows[0][7])] == ["§1", "§2"]

    hits = await store.search("zephyrine", 10, IN_PUBLIC)
    assert [(h.debate_id, h.where) for h in hits] == [("bbbb0001", "source")] and "zephyrine" in hits[0].snippet
    assert await store.search("quillwort", 10, IN_PUBLIC) == []  # a private channel's brief stays there
    assert [h.debate_id for h in await store.search("quillwort", 10, IN_PRIVATE)] == ["bbbb0002"]
    assert [h.debate_id for h in await store.search("quillwort", 10)] == ["bbbb0002"]  # the operator

    record = await store.get_debate("bbbb0001", None)
    assert record is not None and record.spec is not None and record.spec.brief == public_brief
    assert await store.get_debate("bbbb0002", IN_PUBLIC) is None


@pytest.mark.postgres
async def test_migrate_log_copies_the_brief_both_ways(tmp_path: Path, postgres_url: str) -> None:
    from orchestrator.log import migrate_log

    sqlite, postgres, back = (LogBackend("sqlite", str(tmp_path / "a.db")), LogBackend("postgres", postgres_url),
                              LogBackend("sqlite", str(tmp_path / "b.db")))
    brief = await brief_of(("rfc.md", "# RFC\nMove ingest.\n\n## Cost\nTwo engineers."), ("notes.txt", "Lock: 40 min."))
    debate = DebateSpec(id="cccc0001", topic="Move ingest?", seats=SEATS, judge="openai:j", brief=brief)
    async with sqlite.open() as store:
        await store.create_debate(debate)
    copied = await migrate_log(Path(sqlite.target), postgres.target)
    assert copied.tables["sources"] == 2
    await migrate_log(postgres.target, Path(back.target))
    async with back.open(readonly=True) as store:
        record = await store.get_debate("cccc0001")
    assert record is not None and record.brief == brief and record.spec is not None and record.spec.brief == brief
    (spec_json,) = back.sql("select spec from debates")[0]
    assert "Two engineers" not in spec_json  # the brief's text lives in `sources` only
