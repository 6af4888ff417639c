"""The team in the loop, written once for both databases: audience notes, continuations, channel defaults.

Each runs inside the one transaction its caller opened. A write that checks before it writes locks the
debate's row first, so two processes cannot both find room in a note queue, or both begin the same
continuation; a continuation admitted under the quotas takes the admission lock first, as a start does
(writes.py), so the two never deadlock. A note waits (`round` NULL) until a round takes it; taking marks
it with that round, so a step that runs again after a restart gets the same notes back.
"""

from __future__ import annotations

from orchestrator.log import rows
from orchestrator.log.audit import AuditEntry, send_audit
from orchestrator.log.dialect import Conn
from orchestrator.log.reads import interjection_rows
from orchestrator.log.records import ContinuationRefused, InterjectionRefused
from orchestrator.log.spend import reservation
from orchestrator.log.writes import check_room
from orchestrator.models import ChannelDefaults, Interjection
from orchestrator.quotas import Claim, Quota


async def _waiting(c: Conn, debate_id: str) -> int:
    return int(await c.one("select count(*) from interjections where debate_id = :id and round is null",
                           {"id": debate_id}))


async def add_interjection(c: Conn, note: Interjection, max_waiting: int) -> int:
    """Queue a note; how many now wait. InterjectionRefused unless the debate is running (facts: or
    completed) and fewer than `max_waiting` wait; the same note id sent again is stored once."""
    status = await c.lock_debate(note.debate_id)
    if await c.values("select 1 from interjections where id = :id", {"id": note.id}):
        return await _waiting(c, note.debate_id)  # a repeated request: stored once
    waiting = await _waiting(c, note.debate_id)
    InterjectionRefused.check(note, status, waiting, max_waiting)
    await c.insert("interjections", rows.interjection_row(note.model_copy(update={"round": None}), c.time))
    return waiting + 1


async def may_take_interjections(c: Conn, debate_id: str, round: int) -> bool:
    """Whether `take_interjections` could find anything: a note waits, or was taken for `round` already,
    or the debate is unknown (its error is the transaction's to raise). One read, no lock: a note added
    after it waits for the next round, as one added just after the transaction would."""
    args = {"debate_id": debate_id, "round": round}
    (row,) = await c.rows("select exists(select 1 from debates where id = :debate_id) as known,"
                          " exists(select 1 from interjections where debate_id = :debate_id"
                          " and (round is null or round = :round)) as waiting", args)
    return not row["known"] or bool(row["waiting"])


async def take_interjections(c: Conn, debate_id: str, round: int, limit: int) -> list[Interjection]:
    await c.send_lock(debate_id)
    args = {"round": round, "debate_id": debate_id, "limit": limit}
    # room: what `limit` leaves after the notes taken for this round already; facts first (a continuation's
    # one round must carry them), then the oldest
    await c.send(
        "update interjections set round = :round where id in (select id from interjections"
        " where debate_id = :debate_id and round is null"
        f" order by kind = 'facts' desc, at, {c.seq} limit (select case when count(*) < :limit"
        " then :limit - count(*) else 0 end from interjections where debate_id = :debate_id and round = :round))",
        args)
    found = await c.send("select * from interjections where debate_id = :debate_id and round = :round"
                         f" order by at, {c.seq}", args)
    await c.commit()
    return [rows.interjection(r, c.epoch) for r in await found.rows()]


async def interjections(c: Conn, debate_id: str) -> list[Interjection]:
    return [rows.interjection(r, c.epoch) for r in await interjection_rows(c, debate_id)]


async def begin_continuation(c: Conn, debate_id: str, quota: Quota | None, requested_by: str | None,
                             facts: Interjection | None, at: float) -> int:
    """Check the debate can go on, admit the continuation under `quota` for `requested_by` (None: the
    operator; a None quota counts nothing), store its new facts, and run it again as the next segment
    with its slot held by `requested_by` from `at` — all in one transaction: a refusal changes nothing."""
    if quota is not None:
        await c.lock_admission()
    status = await c.lock_debate(debate_id)
    (debate,) = await c.rows("select segment, platform, workspace, channel from debates where id = :id",
                             {"id": debate_id})
    segment = debate["segment"] or 1
    has_verdict = bool(await c.values("select 1 from verdicts where debate_id = :id limit 1", {"id": debate_id}))
    ContinuationRefused.check(debate_id, status, has_verdict, segment)
    if quota is not None:
        await check_room(c, quota, Claim(platform=debate["platform"], workspace=debate["workspace"],
                                         user=requested_by, channel=debate["channel"]), at)
    if facts is not None:  # facts wait on the completed debate, whatever else waits
        await c.insert("interjections", rows.interjection_row(facts.model_copy(update={"round": None}), c.time),
                       "on conflict do nothing")
    # a continuation admitted under a budget reserves its estimate from now (its `held_since`)
    await c.values("update debates set status = 'running', finished_at = null, error = null, segment = :segment,"
                   " held_by = :by, held_since = :at, reserved_usd = :reserved where id = :id",
                   {"segment": segment + 1, "by": requested_by, "at": c.time(at), "id": debate_id,
                    "reserved": reservation(quota) if quota is not None else None})
    await c.insert("continuations", {"debate_id": debate_id, "segment": segment + 1, "requested_by": requested_by,
                                     "at": c.time(at)},
                   "on conflict (debate_id, segment) do update set requested_by = excluded.requested_by,"
                   " at = excluded.at")
    return segment + 1


async def set_channel_defaults(c: Conn, platform: str, workspace: str | None, channel: str,
                               defaults: ChannelDefaults, by: str | None, at: float) -> None:
    row = {"platform": platform, "workspace": rows.workspace_key(workspace), "channel": channel,
           "json": defaults.model_dump_json(), "updated_by": by, "updated_at": c.time(at)}
    await c.insert("channel_settings", row, "on conflict (platform, workspace, channel) do update set"
                                            " json = excluded.json, updated_by = excluded.updated_by,"
                                            " updated_at = excluded.updated_at")
    shown = defaults.model_dump(mode="json", exclude_defaults=True)
    await send_audit(c, AuditEntry(at=at, platform=platform, workspace=workspace, actor=by, action="config",
                                   target=channel, detail=" ".join(f"{k}={','.join(v) if isinstance(v, list) else v}"
                                                                 for k, v in shown.items())
                                   or "every setting back to the default"))


async def channel_defaults(c: Conn, platform: str, workspace: str | None, channel: str) -> ChannelDefaults:
    return rows.channel_defaults(await c.one(
        "select json from channel_settings where platform = :platform and workspace = :workspace"
        " and channel = :channel", {"platform": platform, "workspace": rows.workspace_key(workspace),
                                    "channel": channel}))
