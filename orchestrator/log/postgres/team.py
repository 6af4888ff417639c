"""The team in the loop, in the Postgres log: audience notes, continuations, each channel's defaults.

The twins of ../team.py, each inside the one transaction its caller opened. A write that checks
before it writes locks the debate's row first (`for no key update`), so two processes cannot both
find room in a note queue, or both begin the same continuation; a continuation admitted under the
quotas takes the admission lock first, as a start does (writes.py), so the two never deadlock.
"""

from __future__ import annotations

from orchestrator.log import rows as shared_rows
from orchestrator.log.postgres.reads import Conn, from_time, interjection_rows, lock_debate, rows, to_time, values
from orchestrator.log.postgres.spend import reserve
from orchestrator.log.postgres.writes import ADMISSION_LOCK, check_room, insert
from orchestrator.log.records import ContinuationRefused, InterjectionRefused
from orchestrator.models import ChannelDefaults, Interjection
from orchestrator.quotas import Claim, Quota


async def _waiting(conn: Conn, debate_id: str) -> int:
    (count,) = await values(conn, "select count(*) from interjections where debate_id = %s and round is null",
                            [debate_id])
    return int(count)


async def add_interjection(conn: Conn, note: Interjection, max_waiting: int) -> int:
    status = await lock_debate(conn, note.debate_id)
    if await values(conn, "select 1 from interjections where id = %s", [note.id]):
        return await _waiting(conn, note.debate_id)  # a repeated request: stored once
    waiting = await _waiting(conn, note.debate_id)
    InterjectionRefused.check(note, status, waiting, max_waiting)
    await insert(conn, "interjections", shared_rows.interjection_row(note.model_copy(update={"round": None}), to_time))
    return waiting + 1


async def take_interjections(conn: Conn, debate_id: str, round: int, limit: int) -> list[Interjection]:
    await lock_debate(conn, debate_id)
    (taken,) = await values(conn, "select count(*) from interjections where debate_id = %s and round = %s",
                            [debate_id, round])
    if taken < limit:
        # facts first (a continuation's one round must carry them), then the oldest
        await conn.execute(
            "update interjections set round = %(round)s where id in (select id from interjections"
            " where debate_id = %(debate_id)s and round is null"
            " order by kind = 'facts' desc, at, seq limit %(room)s)",
            {"round": round, "debate_id": debate_id, "room": limit - taken})
    found = await rows(conn, "select * from interjections where debate_id = %s and round = %s order by at, seq",
                       [debate_id, round])
    return [shared_rows.interjection(r, from_time) for r in found]


async def interjections(conn: Conn, debate_id: str) -> list[Interjection]:
    return [shared_rows.interjection(r, from_time) for r in await interjection_rows(conn, debate_id)]


async def begin_continuation(conn: Conn, debate_id: str, quota: Quota | None, requested_by: str | None,
                             facts: Interjection | None, at: float) -> int:
    """As ../team.py `begin_continuation`: checked, admitted (under the admission lock, taken before the
    debate's row as `admit` takes it), its facts stored, run again with its slot held by `requested_by`."""
    if quota is not None:
        await conn.execute("select pg_advisory_xact_lock(%s)", [ADMISSION_LOCK])
    status = await lock_debate(conn, debate_id)
    (debate,) = await rows(conn, "select segment, platform, workspace, channel from debates where id = %s",
                           [debate_id])
    segment = debate["segment"] or 1
    has_verdict = bool(await values(conn, "select 1 from verdicts where debate_id = %s limit 1", [debate_id]))
    ContinuationRefused.check(debate_id, status, has_verdict, segment)
    if quota is not None:
        await check_room(conn, quota, Claim(platform=debate["platform"], workspace=debate["workspace"],
                                            user=requested_by, channel=debate["channel"]), at)
        await reserve(conn, debate_id, quota)
    if facts is not None:  # facts wait on the completed debate, whatever else waits (../team.py)
        await insert(conn, "interjections", shared_rows.interjection_row(facts.model_copy(update={"round": None}),
                                                                         to_time), "on conflict do nothing")
    await conn.execute("update debates set status = 'running', finished_at = null, error = null, segment = %s,"
                       " held_by = %s, held_since = %s where id = %s",
                       [segment + 1, requested_by, to_time(at), debate_id])
    await insert(conn, "continuations", {"debate_id": debate_id, "segment": segment + 1,
                                         "requested_by": requested_by, "at": to_time(at)},
                 "on conflict (debate_id, segment) do update set requested_by = excluded.requested_by,"
                 " at = excluded.at")
    return segment + 1


async def set_channel_defaults(conn: Conn, platform: str, workspace: str | None, channel: str,
                               defaults: ChannelDefaults, by: str | None, at: float) -> None:
    row = {"platform": platform, "workspace": shared_rows.workspace_key(workspace), "channel": channel,
           "json": defaults.model_dump_json(), "updated_by": by, "updated_at": to_time(at)}
    await insert(conn, "channel_settings", row, "on conflict (platform, workspace, channel) do update set"
                                                " json = excluded.json, updated_by = excluded.updated_by,"
                                                " updated_at = excluded.updated_at")


async def channel_defaults(conn: Conn, platform: str, workspace: str | None, channel: str) -> ChannelDefaults:
    found = await values(conn, "select json from channel_settings where platform = %s and workspace = %s"
                               " and channel = %s", [platform, shared_rows.workspace_key(workspace), channel])
    return shared_rows.channel_defaults(found[0] if found else None)
