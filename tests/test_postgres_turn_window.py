"""`debate_turn_window` (orchestrator/log/turn_window.py, migrations m016 and m017) gives the window a plain
statement gives, the newest matches of a query among the turns with their score, whichever way it finds
them: from the planner's statistics or its own sample, through an id range or the plain statement, with
turns deleted from the middle, and for words whose density changes along the log; with a search's scope,
the newest matches among the turns that scope may see, as the plain statement joined to the debates."""

from __future__ import annotations

import psycopg
import pytest

from orchestrator.log import turn_window
from orchestrator.log.postgres.store import _spelled
from orchestrator.log.reads import scope_sql
from orchestrator.log.records import Scope

pytestmark = pytest.mark.postgres

TURNS = 4_000
PER_DEBATE = 5

WINDOW = """select turn_id, turn_debate, turn_score from debate_turn_window(debate_tsquery(%(q)s), %(n)s)
            order by turn_id desc limit %(n)s"""
PLAIN = """select id, debate_id, -ts_rank(text_tsv, debate_tsquery(%(q)s)) from turns
           where text_tsv @@ debate_tsquery(%(q)s) order by id desc limit %(n)s"""
QUERIES = ("everywhere", "twentieth", "seventh", "lateword", "earlyword", "rarity", "twentieth seventh",
           "twentieth or rarity", "-twentieth", "\"twentieth everywhere\"", "nowhere", "")
WANTED = (1, 13, 60, 150, 1_000)


def _text(n: int) -> str:
    words = ["everywhere"] + ["twentieth"] * (n % 20 == 0) + ["seventh", "seventh"] * (n % 7 == 0)
    words += ["lateword"] * (n > TURNS * 3 // 4 and n % 3 == 0) + ["earlyword"] * (n < TURNS // 4 and n % 3 == 0)
    words += ["rarity"] * (n % 997 == 0)
    return " ".join([*words, f"filler{n % 50}"])


def _load(url: str) -> None:
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        cur.executemany("insert into debates (id, topic, format, status, created_at) values (%s, %s, 'challenge',"
                        " 'completed', now())", [(f"d{d:05d}", f"debate {d}") for d in range(TURNS // PER_DEBATE)])
        cur.executemany("insert into turns (debate_id, round, seat, status, text) values (%s, %s, 'A', 'ok', %s)",
                        [(f"d{n // PER_DEBATE:05d}", n % PER_DEBATE + 1, _text(n)) for n in range(TURNS)])
        cur.execute("delete from turns where id between 1500 and 2100")  # a gap in the ids


@pytest.fixture
def loaded(postgres_log_url: str) -> str:
    _load(postgres_log_url)
    return postgres_log_url


FETCHED = "select idx_tup_fetch from pg_stat_xact_user_tables where relname = 'turns'"


def _fetched(conn: psycopg.Connection) -> int:
    row = conn.execute(FETCHED).fetchone()
    return int(row[0]) if row else 0


def _windows(url: str) -> dict[tuple[str, int], tuple[list[tuple[object, ...]], int]]:
    """Per query and size: the function's window (its newest `n`), checked against the plain one's, and
    the turns the function read to find it (this transaction's count of rows fetched by an index)."""
    out = {}
    with psycopg.connect(url) as conn:
        for q in QUERIES:
            for n in WANTED:
                args = {"q": q, "n": n}
                began = _fetched(conn)
                window = conn.execute(WINDOW, args).fetchall()
                read = _fetched(conn) - began
                assert window == conn.execute(PLAIN, args).fetchall(), (q, n)
                out[(q, n)] = (window, read)
    return out


def test_the_window_is_the_plain_statements_with_and_without_statistics(loaded: str) -> None:
    before = _windows(loaded)  # no statistics yet: the function samples the newest turns
    with psycopg.connect(loaded, autocommit=True) as conn:
        conn.execute("analyze turns")
    after = _windows(loaded)  # the lexemes' frequencies from the statistics
    assert {key: window for key, (window, _) in before.items()} == {key: window for key, (window, _) in after.items()}
    # a word of the statistics in 1 turn of 20 (5 %): its newest 60 are read from a range that holds little
    # more than them, where the plain statement reads every match (170) or walks ~1,200 turns
    matches = sum(1 for n in range(TURNS) if n % 20 == 0 and not 1500 <= n + 1 <= 2100)
    window, read = after[("twentieth", 60)]
    assert len(window) == 60 and read < matches // 2


def test_the_setting_it_changes_is_the_callers_again_afterwards(loaded: str) -> None:
    with psycopg.connect(loaded, autocommit=True) as conn:
        conn.execute("analyze turns")
        for setting in ("off", "on"):
            conn.execute(f"set enable_indexscan = {setting}")
            conn.execute(WINDOW, {"q": "twentieth", "n": 13}).fetchall()
            row = conn.execute("show enable_indexscan").fetchone()
            assert row is not None and row[0] == setting


# Where each debate was started: platforms, workspaces (some none), channels, public and private ones, so
# the scopes below each see a different share of the turns, from most of them to none.
SCOPES = (
    Scope(platform="slack", workspace="T1", channel="C2"),  # T1's public channels and its own channel
    Scope(platform="slack", workspace=None, channel="C1"),  # a DM-like place: its own channel only
    Scope(platform="discord", workspace="T2", channel="C0"),
    Scope(platform="slack", workspace="T9", channel="C9"),  # sees nothing
)


def _place(d: int) -> tuple[str, str | None, str, bool]:
    platform = "discord" if d % 5 == 4 else "slack"
    workspace = None if d % 11 == 0 else ("T1" if d % 3 else "T2")
    return platform, workspace, f"C{d % 4}", d % 7 == 0


def _place_debates(url: str) -> None:
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        cur.executemany("update debates set platform = %s, workspace = %s, channel = %s, channel_private = %s"
                        " where id = %s", [(*_place(d), f"d{d:05d}") for d in range(TURNS // PER_DEBATE)])


def _scoped_windows(url: str) -> dict[tuple[int, str, int], list[tuple[object, ...]]]:
    """Per scope, query and size: the function's window with the scope's condition, checked against the
    plain statement's with the same condition."""
    out = {}
    with psycopg.connect(url) as conn:
        for number, scope in enumerate(SCOPES):
            visible, values = scope_sql(scope)
            plain = _spelled("select t.id, t.debate_id, -ts_rank(t.text_tsv, debate_tsquery(:q)) from turns t"
                             " join debates d on d.id = t.debate_id where t.text_tsv @@ debate_tsquery(:q) and "
                             f"{visible} order by t.id desc limit :n")
            scoped = ("select turn_id, turn_debate, turn_score from debate_turn_window(debate_tsquery(%(q)s), %(n)s,"
                      " %(visible)s, array[%(scope_platform)s, %(scope_channel)s, %(scope_workspace)s]::text[])"
                      " order by turn_id desc limit %(n)s")
            for q in QUERIES:
                for n in WANTED:
                    args = {"q": q, "n": n, "visible": turn_window.scope_condition(visible), **values}
                    window = conn.execute(scoped, args).fetchall()
                    assert window == conn.execute(plain, args).fetchall(), (scope, q, n)
                    out[(number, q, n)] = window
    return out


def test_a_scoped_window_holds_the_newest_matches_that_scope_may_see(loaded: str) -> None:
    _place_debates(loaded)
    before = _scoped_windows(loaded)
    with psycopg.connect(loaded, autocommit=True) as conn:
        conn.execute("analyze turns")
        conn.execute("analyze debates")
    after = _scoped_windows(loaded)
    assert before == after
    # the scopes see different shares: T1's channel many, the DM-like channel fewer, the stranger none
    sizes = [len(after[(number, "everywhere", 1_000)]) for number in range(len(SCOPES))]
    assert sizes[0] > sizes[1] > 0 and sizes[2] > 0 and sizes[3] == 0, sizes
    # and the unscoped call is as before: every match, not only a scope's
    with psycopg.connect(loaded) as conn:
        everything = conn.execute(WINDOW, {"q": "everywhere", "n": 1_000}).fetchall()
        assert everything == conn.execute(PLAIN, {"q": "everywhere", "n": 1_000}).fetchall()
    assert everything != after[(0, "everywhere", 1_000)]

