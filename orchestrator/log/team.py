"""The team in the loop, in the SQLite log: audience notes, continuations, each channel's defaults.

Like writes.py, each function builds its rows up front and returns the `fn(db)` the database thread
runs inside one IMMEDIATE transaction, so a check and the write it allows cannot be split by another
writer (thread or process); a continuation is admitted under the quotas inside its own (writes.py
`check_room`). A note waits (`round` NULL) until a round takes it; taking marks it with
that round, so a step that runs again after a restart gets the same notes back.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlite_utils import Database

from orchestrator.log import rows
from orchestrator.log.reads import dict_rows, interjection_rows, table
from orchestrator.log.records import ContinuationRefused, DebateNotFoundError, InterjectionRefused, from_iso, to_iso
from orchestrator.log.spend import reserve
from orchestrator.log.writes import check_room
from orchestrator.models import ChannelDefaults, Interjection
from orchestrator.quotas import Claim, Quota


def _status(db: Database, debate_id: str) -> tuple[str, int]:
    found = db.execute("select status, segment from debates where id = ?", [debate_id]).fetchone()
    if found is None:
        raise DebateNotFoundError(debate_id)
    return found[0], found[1] or 1


def _waiting(db: Database, debate_id: str) -> int:
    (count,) = db.execute("select count(*) from interjections where debate_id = ? and round is null",
                          [debate_id]).fetchone()
    return int(count)


def add_interjection(note: Interjection, max_waiting: int) -> Callable[[Database], int]:
    row = rows.interjection_row(note.model_copy(update={"round": None}), to_iso)

    def fn(db: Database) -> int:
        status, _ = _status(db, note.debate_id)
        if db.execute("select 1 from interjections where id = ?", [note.id]).fetchone():
            return _waiting(db, note.debate_id)  # a repeated request: stored once
        waiting = _waiting(db, note.debate_id)
        InterjectionRefused.check(note, status, waiting, max_waiting)
        table(db, "interjections").insert(row)
        return waiting + 1

    return fn


def take_interjections(debate_id: str, round: int, limit: int) -> Callable[[Database], list[Interjection]]:
    def fn(db: Database) -> list[Interjection]:
        (taken,) = db.execute("select count(*) from interjections where debate_id = ? and round = ?",
                              [debate_id, round]).fetchone()
        if taken < limit:
            # facts first (a continuation's one round must carry them), then the oldest
            db.execute(
                "update interjections set round = :round where id in (select id from interjections"
                " where debate_id = :debate_id and round is null"
                " order by kind = 'facts' desc, at, rowid limit :room)",
                {"round": round, "debate_id": debate_id, "room": limit - taken})
        return [rows.interjection(r, from_iso) for r in dict_rows(
            db, "select * from interjections where debate_id = ? and round = ? order by at, rowid",
            [debate_id, round])]

    return fn


def interjections(debate_id: str) -> Callable[[Database], list[Interjection]]:
    return lambda db: [rows.interjection(r, from_iso) for r in interjection_rows(db, debate_id)]


def begin_continuation(debate_id: str, quota: Quota | None, requested_by: str | None, facts: Interjection | None,
                       at: float) -> Callable[[Database], int]:
    """Check the debate can go on, admit the continuation under `quota` for `requested_by` (None: the
    operator; a None quota counts nothing), store its new facts, and run it again as the next segment
    with its slot held by `requested_by` from `at` — all in one transaction: a refusal changes nothing."""

    def fn(db: Database) -> int:
        found = db.execute("select status, segment, platform, workspace, channel from debates where id = ?",
                           [debate_id]).fetchone()
        if found is None:
            raise DebateNotFoundError(debate_id)
        status, segment = found[0], found[1] or 1
        has_verdict = db.execute("select 1 from verdicts where debate_id = ?", [debate_id]).fetchone() is not None
        ContinuationRefused.check(debate_id, status, has_verdict, segment)
        if quota is not None:
            check_room(db, quota, Claim(platform=found[2], workspace=found[3], user=requested_by, channel=found[4]),
                       at)
            reserve(db, debate_id, quota)
        # facts wait on the completed debate, whatever else waits: the continuation's one round takes them first
        if facts is not None and not db.execute("select 1 from interjections where id = ?", [facts.id]).fetchone():
            table(db, "interjections").insert(rows.interjection_row(facts.model_copy(update={"round": None}), to_iso))
        db.execute("update debates set status = 'running', finished_at = null, error = null, segment = ?,"
                   " held_by = ?, held_since = ? where id = ?", [segment + 1, requested_by, to_iso(at), debate_id])
        table(db, "continuations").insert({"debate_id": debate_id, "segment": segment + 1,
                                           "requested_by": requested_by, "at": to_iso(at)}, replace=True)
        return segment + 1

    return fn


def set_channel_defaults(platform: str, workspace: str | None, channel: str, defaults: ChannelDefaults,
                         by: str | None, at: float) -> Callable[[Database], None]:
    row = {"platform": platform, "workspace": rows.workspace_key(workspace), "channel": channel,
           "json": defaults.model_dump_json(), "updated_by": by, "updated_at": to_iso(at)}

    def fn(db: Database) -> None:
        db.execute("insert into channel_settings (platform, workspace, channel, json, updated_by, updated_at)"
                   " values (:platform, :workspace, :channel, :json, :updated_by, :updated_at)"
                   " on conflict (platform, workspace, channel) do update set json = excluded.json,"
                   " updated_by = excluded.updated_by, updated_at = excluded.updated_at", row)

    return fn


def channel_defaults(platform: str, workspace: str | None, channel: str) -> Callable[[Database], ChannelDefaults]:
    def fn(db: Database) -> ChannelDefaults:
        found = db.execute("select json from channel_settings where platform = ? and workspace = ? and channel = ?",
                           [platform, rows.workspace_key(workspace), channel]).fetchone()
        return rows.channel_defaults(found[0] if found else None)

    return fn
