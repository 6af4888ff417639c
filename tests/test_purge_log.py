"""Purging the log (issue 55), on both backends (a real SQLite file, a real Postgres database): a purged debate
leaves no row in any table holding a debate id (the tables listed from the database itself, so a table added
later is checked too), nor in the search index; the budgets and `debate usage` count the same money and tokens
after; a person's purge leaves no row holding their id or name outside the audit trail; and a purge that fails
between debates leaves each one whole or gone."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from orchestrator.budgets import CallUsage
from orchestrator.log import DebateLog, DebateNotFoundError, StoreError, migrate_log
from orchestrator.log.purge import REMOVED, PurgeSelection
from orchestrator.models import DebateSpec, Interjection, Outcome, Seat, Turn, Verdict, Vote
from orchestrator.purge import purge
from orchestrator.quotas import Budget, Claim, Quota
from orchestrator.usage import standings, usage
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:gpt-5"),
         Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-5"))
NOON = datetime(2026, 3, 10, 12, 0, tzinfo=UTC).timestamp()
MONTH = datetime(2026, 3, 1, tzinfo=UTC).timestamp()
OPEN = Quota(max_running=100)
PERSON = "U0PURGEME7"
PERSON_NAME = "Zelda Quillfeather"
_n = itertools.count()


async def debate(store: DebateLog, user: str, at: float, *, workspace: str = "T1", word: str = "kafka",
                 finish: bool = True, turn_text: str | None = None, platform: str = "slack") -> str:
    """A debate with a turn, an unpriced turn, a judge call, a verdict, a vote, a note, a message and a page key."""
    s = DebateSpec(topic=f"Is {word} right for us?", seats=SEATS, judge="openai:gpt-5", platform=platform,
                   workspace=workspace, channel="C1", requested_by=user)
    await store.admit(s, OPEN, at=at)
    await store.add_turn(Turn(debate_id=s.id, round=1, seat="A", role="proposer", kind="opening",
                              model="openai:gpt-5", started_at=at, input_tokens=1000, output_tokens=2000,
                              text=turn_text or f"{word} has the throughput"))
    await store.add_turn(Turn(debate_id=s.id, round=1, seat="B", role="challenger", kind="opening",
                              model="ollama:unpriced-model", started_at=at + 5, input_tokens=300, output_tokens=400,
                              text=f"{word} costs too much"))
    await store.add_call(CallUsage(attempt=f"a{next(_n)}", debate_id=s.id, at=at + 10, purpose="judge",
                                   model="anthropic:claude-sonnet-4-5", input_tokens=5000, output_tokens=700))
    await store.record_vote(Vote(debate_id=s.id, user=f"V{next(_n)}", choice="agree", platform="slack"))
    await store.add_interjection(Interjection(debate_id=s.id, author="Some One", user=f"N{next(_n)}",
                                              platform="slack", text=f"think about {word} ops"), max_waiting=5)
    await store.set_message(s.id, "root", "slack", "C1", f"{next(_n)}.0001")
    await store.page_token(s.id)
    if finish:
        await store.set_verdict(s.id, Verdict(winner="A", recommendation=f"adopt {word}"), at=at + 20)
        await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=1), at=at + 20)
    return s.id


def tables_with_debate_id(backend: LogBackend) -> list[str]:
    """Every table holding a `debate_id` column, as the database lists them (not as the code knows them)."""
    if backend.name == "sqlite":
        names = [r[0] for r in backend.sql("select name from sqlite_master where type = 'table'")]
        return [n for n in names if any(c[1] == "debate_id" for c in backend.sql(f"pragma table_info('{n}')"))]
    return [r[0] for r in backend.sql("select table_name from information_schema.columns where column_name ="
                                      " 'debate_id' and table_schema = current_schema()")]


def rows_of(backend: LogBackend, debate_id: str) -> dict[str, int]:
    found = {t: int(backend.sql(f"select count(*) from {t} where debate_id = ?", [debate_id])[0][0])
             for t in tables_with_debate_id(backend)}
    found["debates"] = int(backend.sql("select count(*) from debates where id = ?", [debate_id])[0][0])
    return found


async def figures(store: DebateLog) -> dict[str, Any]:
    """What `debate usage` shows every way, and a user's and an admin's standings against budgets."""
    calls = await store.spent_calls(MONTH)
    shown: dict[str, Any] = {by: usage(calls, MONTH, by).model_dump() for by in ("workspace", "user", "model", "day")}
    budget = Budget(per_workspace_day=100.0, per_user_day=50.0, per_month=1000.0)
    for user in ("U1", "U2", PERSON):
        claim = Claim(platform="slack", workspace="T1", channel="C1", user=user)
        shown[user] = [s.model_dump() for s in standings(calls, claim, budget, NOON + 3600, admin=False)]
    admin = Claim(platform="slack", workspace="T1", channel="C1", user="U1")
    shown["admin"] = [s.model_dump() for s in standings(calls, admin, budget, NOON + 3600, admin=True)]
    return _rounded(shown)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


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


def every_table(backend: LogBackend) -> list[str]:
    """Every table of the log as the database lists it, the search index's own tables included."""
    if backend.name == "sqlite":
        return [r[0] for r in backend.sql("select name from sqlite_master where type = 'table'"
                                          " and sql not like 'create virtual table%'")]
    return [r[0] for r in backend.sql("select table_name from information_schema.tables where table_schema ="
                                      " current_schema() and table_type = 'BASE TABLE'")]


def dump(backend: LogBackend) -> dict[str, list[str]]:
    """Every row of every table, as text, sorted (a snapshot to compare)."""
    return {t: sorted(repr(r) for r in backend.sql(f"select * from {t}")) for t in every_table(backend)}


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


def holding(backend: LogBackend, needle: str) -> dict[str, int]:
    """Rows of each table (the audit trail aside) with `needle` anywhere in them."""
    found = {}
    for table in every_table(backend):
        if table == "audit":
            continue
        cast = "cast(t.* as text)" if backend.name == "postgres" else None
        if cast is None:
            columns = [c[1] for c in backend.sql(f"pragma table_info('{table}')")]
            cast = " || '|' || ".join(f"coalesce(cast(t.\"{c}\" as text), '')" for c in columns)
        n = int(backend.sql(f"select count(*) from {table} t where {cast} like ?", [f"%{needle}%"])[0][0])
        if n:
            found[table] = n
    return found


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
