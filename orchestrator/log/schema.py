"""The log's schema as a numbered list of small named migrations.

Each function runs once, inside a transaction together with the row that records it in
`_sqlite_migrations` (sqlite-utils `Migrations`). Never rename or edit an applied migration:
append a new one. Names sort in the order they were written (`m001_…`, `m002_…`).
"""

from __future__ import annotations

import sqlite3

from sqlite_utils import Database
from sqlite_utils.db import Table
from sqlite_utils.migrations import Migrations

MIGRATION_SET = "debate_bot"
MIGRATIONS_TABLE = Migrations.migrations_table  # "_sqlite_migrations"

migrations = Migrations(MIGRATION_SET)


def _table(db: Database, name: str) -> Table:
    table = db[name]
    assert isinstance(table, Table), f"{name} is a view, expected a table"
    return table


@migrations()
def m001_core_tables(db: Database) -> None:
    """debates, seats, turns, verdicts, votes, messages, notices — the CONTRACT.md log."""
    _table(db, "debates").create(
        {
            "id": str,
            "topic": str,
            "format": str,
            "status": str,
            "created_at": str,
            "finished_at": str,
            "platform": str,
            "channel": str,
            "thread": str,
            "requested_by": str,
            "rounds_planned": int,
            "rounds_completed": int,
            "effort": str,
            "judge": str,
            "input_tokens": int,
            "output_tokens": int,
            "cost_usd": float,
            "error": str,
            "warnings": str,  # JSON list
            "spec": str,  # JSON DebateSpec
        },
        pk="id",
        not_null={"topic", "format", "status", "created_at"},
        defaults={"rounds_completed": 0, "input_tokens": 0, "output_tokens": 0, "warnings": "[]"},
    )
    _table(db, "seats").create(
        {
            "debate_id": str,
            "label": str,
            "role": str,
            "provider": str,
            "model": str,
            "position": int,
        },
        pk=("debate_id", "label"),
        not_null={"role", "model"},
    )
    _table(db, "turns").create(
        {
            "id": int,
            "debate_id": str,
            "round": int,
            "seat": str,
            "role": str,
            "kind": str,
            "model": str,
            "text": str,
            "started_at": str,
            "duration_ms": int,
            "input_tokens": int,
            "output_tokens": int,
            "cost_usd": float,
            "status": str,
            "error": str,
        },
        pk="id",
        not_null={"debate_id", "round", "seat", "status"},
    )
    _table(db, "verdicts").create(
        {
            "debate_id": str,
            "winner": str,
            "split": int,
            "reasoning": str,
            "recommendation": str,
            "consensus": str,
            "json": str,  # the whole Verdict
            "at": str,
        },
        pk="debate_id",
    )
    _table(db, "votes").create(
        {"debate_id": str, "user": str, "choice": str, "platform": str, "at": str},
        pk=("debate_id", "user"),
        not_null={"choice"},
    )
    _table(db, "messages").create(
        {"debate_id": str, "key": str, "platform": str, "channel": str, "message_id": str},
        pk=("debate_id", "key"),
        not_null={"message_id"},
    )
    _table(db, "notices").create(
        {"id": int, "debate_id": str, "at": str, "level": str, "text": str},
        pk="id",
        not_null={"debate_id", "text"},
    )


@migrations()
def m002_indexes(db: Database) -> None:
    """What history, the per-debate reads and the interrupted-debate sweep look up by."""
    _table(db, "debates").create_index(["created_at"])
    _table(db, "debates").create_index(["status"])
    _table(db, "debates").create_index(["platform", "channel", "created_at"])
    _table(db, "turns").create_index(["debate_id", "round", "id"])
    _table(db, "notices").create_index(["debate_id"])


@migrations()
def m003_full_text_search(db: Database) -> None:
    """FTS5 over topics, turn texts and verdicts, kept in sync by triggers.

    `turns` has an INTEGER PRIMARY KEY, so its FTS rowid is that key. `debates` and `verdicts`
    have TEXT keys; sqlite-utils indexes content tables by their implicit `rowid`, which SQLite
    keeps stable for a table's life except through VACUUM: rebuild the FTS tables after one.
    """
    tokenize = FTS_TOKENIZER if _tokenizer_available(db, FTS_TOKENIZER) else None
    for table, columns in FTS_COLUMNS.items():
        _table(db, table).enable_fts(columns, create_triggers=True, replace=True, tokenize=tokenize)


@migrations()
def m004_request_keys(db: Database) -> None:
    """Platform request ids already acted on, so a retried delivery never starts a second debate,
    whichever process or host receives it (they share this log)."""
    db["request_keys"].create({"key": str, "at": str}, pk="key", not_null={"at"})
    db["request_keys"].create_index(["at"])


@migrations()
def m005_tenancy_and_runner(db: Database) -> None:
    """Typed tenancy on `debates` instead of message rows, and which process runs each debate.

    `workspace` (Slack team / Discord guild) is backfilled from the "team" message rows Slack debates
    kept before, which then go. `channel_private` stays NULL for older debates: unknown counts as
    private. `runner` is NULL for older debates; a serving process sweeps those as its own.
    """
    debates = _table(db, "debates")
    debates.add_column("workspace", str)
    debates.add_column("channel_private", int)
    debates.add_column("runner", str)
    db.execute(
        "update debates set workspace = (select m.message_id from messages m"
        " where m.debate_id = debates.id and m.key = 'team')"
        " where exists (select 1 from messages m where m.debate_id = debates.id and m.key = 'team')"
    )
    db.execute("delete from messages where key = 'team'")
    debates.create_index(["platform", "workspace", "created_at"])
    debates.create_index(["runner", "status"])
    _table(db, "messages").create_index(["platform", "channel", "message_id"])


@migrations()
def m006_admission(db: Database) -> None:
    """What admission counts by: a requester's starts in the last hour (`writes.admit`); running
    debates are few, and the `status` index finds them."""
    _table(db, "debates").create_index(["platform", "requested_by", "created_at"])


@migrations()
def m007_message_final(db: Database) -> None:
    """Whether each recorded message shows its final text, so a renderer resuming a debate after a
    restart edits only what is unfinished. Messages of debates that had already ended count as final."""
    _table(db, "messages").add_column("final", int, not_null_default=0)
    db.execute("update messages set final = 1 where debate_id in (select id from debates where status != 'running')")
    db.execute("create index messages_not_final on messages (key, debate_id) where final = 0")


@migrations()
def m008_team_in_the_loop(db: Database) -> None:
    """Numbered verdicts (one per `continue`), segments and rematch links on `debates`, audience notes,
    and each channel's defaults.

    `verdicts` gets the key (debate_id, number): SQLite cannot change a primary key in place, so the
    table is rebuilt (rowids kept) and its FTS index and triggers made again on the new table. Existing
    verdicts become number 1. `channel_settings` keys a DM (no workspace) by '' so its primary key
    holds each channel once.
    """
    debates = _table(db, "debates")
    debates.add_column("segment", int, not_null_default=1)
    debates.add_column("rematch_of", str)
    debates.create_index(["rematch_of"])

    columns = "debate_id, winner, split, reasoning, recommendation, consensus, json, at"
    db.execute(
        "create table verdicts_m008 (debate_id text not null, number integer not null default 1, winner text,"
        " split integer, reasoning text, recommendation text, consensus text, json text, at text,"
        " primary key (debate_id, number))"
    )
    db.execute(f"insert into verdicts_m008 (rowid, number, {columns}) select rowid, 1, {columns} from verdicts")
    db.execute("drop table verdicts")
    db.execute("alter table verdicts_m008 rename to verdicts")
    # the index is made again from the rebuilt table, with its triggers on it
    tokenize = FTS_TOKENIZER if _tokenizer_available(db, FTS_TOKENIZER) else None
    _table(db, "verdicts").enable_fts(FTS_COLUMNS["verdicts"], create_triggers=True, replace=True, tokenize=tokenize)

    _table(db, "interjections").create(
        {"id": str, "debate_id": str, "author": str, "user": str, "platform": str, "kind": str, "text": str,
         "round": int, "at": str},
        pk="id",
        not_null={"debate_id", "author", "kind", "text", "at"},
    )
    _table(db, "interjections").create_index(["debate_id", "round", "at"])
    _table(db, "channel_settings").create(
        {"platform": str, "workspace": str, "channel": str, "json": str, "updated_by": str, "updated_at": str},
        pk=("platform", "workspace", "channel"),
        not_null={"platform", "workspace", "channel", "json"},
    )


@migrations()
def m009_thread_renderer(db: Database) -> None:
    """Which front renders the threads of each (platform, workspace), and until when: a lease
    (orchestrator/log/renderers.py). A DM outside any workspace is keyed by ''."""
    _table(db, "thread_renderers").create(
        {"platform": str, "workspace": str, "renderer": str, "until": str},
        pk=("platform", "workspace"),
        not_null={"platform", "workspace", "renderer", "until"},
    )


@migrations()
def m010_running_slots(db: Database) -> None:
    """Who holds each running debate's slot and since when (`held_by`, `held_since`), and who asked for
    each continuation: a `continue` is admitted like a start, for the person who asked, its slot
    counted from when it began (orchestrator/quotas.py). Existing debates are held by their requester
    since their creation, as admission counted them before."""
    debates = _table(db, "debates")
    debates.add_column("held_by", str)
    debates.add_column("held_since", str)
    db.execute("update debates set held_by = requested_by, held_since = created_at")
    _table(db, "continuations").create(
        {"debate_id": str, "segment": int, "requested_by": str, "at": str},
        pk=("debate_id", "segment"),
        not_null={"at"},
    )
    _table(db, "continuations").create_index(["requested_by", "at"])



@migrations()
def m011_budget_model_calls(db: Database) -> None:
    """The model calls that are not a debater's turn (judge passes, tie-breaks, summaries, stance
    splits), each with its tokens and cost, so the spend budgets and `debate usage` count every call
    (orchestrator/budgets.py). `attempt` is drawn where the call ran: a write repeated is one row. And what
    admission reserved for each running debate (`reserved_usd`: its estimate), so two starts admitted at
    once cannot both count on the same money."""
    _table(db, "model_calls").create(
        {"attempt": str, "debate_id": str, "at": str, "purpose": str, "model": str, "input_tokens": int,
         "output_tokens": int, "cost_usd": float},
        pk="attempt",
        not_null={"debate_id", "at", "model"},
    )
    _table(db, "model_calls").create_index(["at"])
    _table(db, "turns").create_index(["started_at"])
    # what admission reserved for a running debate (its estimate); spend recorded since it was admitted comes off
    _table(db, "debates").add_column("reserved_usd", float)

# unicode61 with symbols (So) as token characters, so an emoji in a topic can be searched for;
# diacritics folded, so "debat" finds "débat". An SQLite too old for `categories` gets the default.
FTS_TOKENIZER = "unicode61 remove_diacritics 2 categories 'L* N* Co So'"
FTS_COLUMNS: dict[str, list[str]] = {
    "debates": ["topic"],
    "turns": ["text"],
    "verdicts": ["recommendation", "reasoning"],
}


def _tokenizer_available(db: Database, tokenize: str) -> bool:
    try:
        db.execute(f"create virtual table temp._fts_probe using fts5(x, tokenize={db.quote(tokenize)})")
    except sqlite3.OperationalError:
        return False
    db.execute("drop table temp._fts_probe")
    return True


def migration_names() -> list[str]:
    """Every migration in the order it applies (read from a scratch in-memory database)."""
    return [m.name for m in migrations.pending(Database(memory=True))]
