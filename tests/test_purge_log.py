"""Purging the log (issue 55), on both backends (a real SQLite file, a real Postgres database): a purged debate
leaves no row in any table holding a debate id (the tables listed from the database itself, so a table added
later is checked too), nor in the search index; the budgets and `debate usage` count the same money and tokens
after; a person's purge leaves no row holding their id or name outside the audit trail; and a purge that fails
between debates leaves each one whole or gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.log import DebateNotFoundError, StoreError, migrate_log
from orchestrator.log.purge import REMOVED, PurgeSelection
from orchestrator.models import Interjection, Vote
from orchestrator.purge import purge
from tests.log_backends import LogBackend
from tests.purge_log_harness import NOON, PERSON, PERSON_NAME, debate, dump, figures, holding, rows_of


async def test_a_purged_debate_leaves_no_row_and_the_usage_figures_stay(log_backend: LogBackend) -> None:
    async with log_backend.open(runner="serve:a") as store:
        gone = await debate(store, "U1", NOON - 3600, word="zookeeper")
        kept = await debate(store, "U1", NOON - 1800, word="kafka")
        other = await debate(store, "U2", NOON - 7200, workspace="T2", word="nats")
        rematch = await debate(store, "U2", NOON - 60, word="redis")
        log_backend.sql("update debates set rematch_of = ? where id = ?", [gone, rematch])
        before = await figures(store)
        kept_rows = rows_of(log_backend, kept)
        assert await store.search("zookeeper")

        report = await purge(store, PurgeSelection(debate=gone))

        assert report.purged == [gone]
        assert report.totals == {"debates": 1, "turns": 2, "notes": 1, "votes": 1, "sources": 0}
        assert set(rows_of(log_backend, gone).values()) == {0}, rows_of(log_backend, gone)
        assert rows_of(log_backend, kept) == kept_rows and rows_of(log_backend, other)["turns"] == 2
        assert await store.get_debate(gone) is None and await store.stored_page_token(gone) is None
        assert await store.search("zookeeper") == [], "the search index lets the purged debate go"
        assert log_backend.turn_text_matches("zookeeper") == 0
        assert log_backend.sql("select rematch_of from debates where id = ?", [rematch])[0][0] is None
        tomb = await store.purged(gone)
        assert tomb is not None and tomb["reason"] == "request"
        with pytest.raises(DebateNotFoundError):  # a renderer's late record of a purged debate's message
            await store.set_message(gone, "verdict", "slack", "C1", "9.0001", final=True)
        assert set(rows_of(log_backend, gone).values()) == {0}
        assert await figures(store) == before, "the budgets and `debate usage` count the same after a purge"

        again = await purge(store, PurgeSelection(debate=gone))
        assert again.purged == [] and await figures(store) == before, "a purge repeated counts nothing twice"


async def test_a_table_added_later_with_a_debate_id_is_cleared_without_an_edit(log_backend: LogBackend) -> None:
    async with log_backend.open(runner="serve:a") as store:
        gone = await debate(store, "U1", NOON)
        kept = await debate(store, "U1", NOON + 1)
        log_backend.sql("create table sources_later (id integer primary key, debate_id text not null, body text)")
        log_backend.insert("sources_later", [{"id": 1, "debate_id": gone, "body": "the brief"},
                                             {"id": 2, "debate_id": kept, "body": "another brief"}])
        dry = await purge(store, PurgeSelection(debate=gone), dry_run=True)
        assert dry.totals["debates"] == 1
        assert rows_of(log_backend, gone)["sources_later"] == 1, "a dry run changes nothing"

        await purge(store, PurgeSelection(debate=gone))
        assert set(rows_of(log_backend, gone).values()) == {0}
        assert rows_of(log_backend, kept)["sources_later"] == 1


async def test_a_dry_run_changes_nothing(log_backend: LogBackend) -> None:
    async with log_backend.open(runner="serve:a") as store:
        ids = [await debate(store, "U1", NOON + i, workspace="T9") for i in range(2)]
        before = dump(log_backend)
        report = await purge(store, PurgeSelection(workspace="T9", user=PERSON), dry_run=True)
        assert report.dry_run and report.purged == [] and report.debates == []  # PERSON started none there
        report = await purge(store, PurgeSelection(workspace="T9"), dry_run=True)
        assert [t.id for t in report.debates] == ids
        assert report.totals == {"debates": 2, "turns": 4, "notes": 2, "votes": 2, "sources": 0}
        assert dump(log_backend) == before


async def test_a_persons_purge_leaves_no_row_holding_their_id_or_name(log_backend: LogBackend) -> None:
    async with log_backend.open(runner="serve:a") as store:
        theirs = await debate(store, PERSON, NOON - 3600, word="cassandra")
        others = await debate(store, "U2", NOON - 1800, word="postgres",
                              turn_text=f"As {PERSON_NAME} (<@{PERSON}>) noted, postgres is enough")
        running = await debate(store, "U2", NOON - 60, word="sqlite", finish=False)
        await store.record_vote(Vote(debate_id=others, user=PERSON, choice="disagree", platform="slack"))
        await store.add_interjection(Interjection(debate_id=running, author=PERSON_NAME, user=PERSON,
                                                  platform="slack", text="what about backups?"), max_waiting=5)
        log_backend.sql("update debates set held_by = ? where id = ?", [PERSON, others])
        log_backend.sql("insert into channel_settings (platform, workspace, channel, json, updated_by)"
                        " values ('slack', 'T1', 'C1', '{}', ?)", [PERSON])
        before = await figures(store)
        assert holding(log_backend, PERSON) and holding(log_backend, PERSON_NAME)

        report = await purge(store, PurgeSelection(user=PERSON))

        assert report.purged == [theirs] and report.forgotten is not None
        assert report.forgotten.votes == 1 and report.forgotten.notes == 1
        assert [d for d, _ in report.forgotten.debates] == [others], "the ended debate they appear in"
        assert holding(log_backend, PERSON) == {} and holding(log_backend, PERSON_NAME) == {}
        assert await store.search(PERSON_NAME.split()[0]) == []
        record = await store.get_debate(others)
        assert record is not None and REMOVED in record.turns[0].text and "postgres is enough" in record.turns[0].text
        assert (await store.get_debate(running)) is not None, "others' debates stay, less the person"
        after = await figures(store)
        assert after["model"] == before["model"] and after["day"] == before["day"]
        assert after["workspace"] == before["workspace"] and after["admin"] == before["admin"]


def _fail_deleting(backend: LogBackend, debate_id: str) -> None:
    """From another connection, make deleting this debate's turns fail the way a full disk does."""
    if backend.name == "sqlite":
        backend.sql(f"create trigger purge_fails before delete on turns when old.debate_id = '{debate_id}'"
                    " begin select raise(abort, 'disk I/O error'); end")
        return
    backend.sql(f"""create function purge_fails() returns trigger language plpgsql as $$
        begin if old.debate_id = '{debate_id}' then raise exception 'disk I/O error'; end if; return old; end $$;
        create trigger purge_fails before delete on turns for each row execute function purge_fails();""")


async def test_a_purge_failing_between_debates_leaves_each_whole_or_gone(log_backend: LogBackend) -> None:
    async with log_backend.open(runner="serve:a") as store:
        ids = [await debate(store, "U1", NOON + i, workspace="T5", word=f"w{i}x") for i in range(3)]
        whole = {i: rows_of(log_backend, i) for i in ids}
        _fail_deleting(log_backend, ids[1])
        with pytest.raises((StoreError, Exception), match="disk I/O"):
            await purge(store, PurgeSelection(workspace="T5"))
        assert set(rows_of(log_backend, ids[0]).values()) == {0}, "the first is gone"
        assert rows_of(log_backend, ids[1]) == whole[ids[1]], "the one that failed is whole"
        assert rows_of(log_backend, ids[2]) == whole[ids[2]], "the one not reached is whole"
        assert await store.purged(ids[1]) is None

        log_backend.sql("drop trigger purge_fails" + (" on turns" if log_backend.name == "postgres" else ""))
        report = await purge(store, PurgeSelection(workspace="T5"))
        assert report.purged == ids[1:] and all(set(rows_of(log_backend, i).values()) == {0} for i in ids)


@pytest.mark.postgres
async def test_migrate_log_carries_what_a_purge_left(tmp_path: Path, postgres_url: str) -> None:
    sqlite, postgres = LogBackend("sqlite", str(tmp_path / "a.db")), LogBackend("postgres", postgres_url)
    async with sqlite.open() as store:
        gone = await debate(store, "U1", NOON - 3600, word="zookeeper")
        await debate(store, "U2", NOON - 60)
        before = await figures(store)
        await purge(store, PurgeSelection(debate=gone))
    copied = await migrate_log(Path(sqlite.target), postgres.target)
    assert copied.tables["usage_days"] >= 1 and copied.tables["purged_debates"] == 1 and copied.tables["audit"] == 1
    async with postgres.open() as store:
        assert await figures(store) == before, "the purged debate's spend came along as its sums"
        assert await store.purged(gone) is not None
        assert [e.action for e in await store.audit(0.0)] == ["purge"]


async def test_a_short_id_is_replaced_where_it_is_a_whole_value_never_inside_other_words(
    log_backend: LogBackend
) -> None:
    async with log_backend.open() as store:
        kept = await debate(store, "U2", NOON, turn_text="Also, Alpine is fine")
        log_backend.sql("update debates set held_by = 'Al' where id = ?", [kept])
        report = await purge(store, PurgeSelection(user="Al"))
        record = await store.get_debate(kept)
    assert report.purged == [] and record is not None
    assert record.turns[0].text == "Also, Alpine is fine"
    assert log_backend.sql("select held_by from debates where id = ?", [kept])[0][0] == REMOVED
