"""Data that leaves: whole debates deleted from the log, one transaction each, and a person's traces removed.

The tables a purge clears are read from the database itself (`Conn.tables`), not listed here: every table
with a `debate_id` column loses the debate's rows, then `debates` its row, so a table added by a later
migration is cleared without an edit. The search indexes follow (SQLite's FTS5 by its triggers, Postgres's
vectors are columns of the rows). What the budgets and `debate usage` read survives as text-free sums
(spend.keep_usage), and a tombstone without text (`purged_debates`) says when and why the debate went.

`forget_user` removes a person from the debates that stay: their votes and notes deleted, and their id
and the names they were shown with replaced in every text column of every table but the audit trail
(one shorter than MIN_REPLACED characters only where it is a column's whole value).
Written once over both databases; the dialects differ only in how they list their tables.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from orchestrator.log.dialect import Conn, TableColumns, in_list
from orchestrator.log.spend import keep_usage

Reason = Literal["request", "retention", "uninstall"]
REMOVED = "[removed]"  # what a forgotten person's id and name become where they stay
MIN_REPLACED = 4  # a shorter id or name is replaced only where it is a whole value, not inside text
KEPT_TABLES = frozenset({"audit"})  # who did what stays there (it never holds message text)
_COUNTED = {"turns": "turns", "interjections": "notes", "votes": "votes", "sources": "sources"}


class PurgeSelection(BaseModel):
    """Which debates go: every condition given must hold (none given: nothing is selected)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    debate: str | None = None  # a full id
    platform: str | None = None  # with `workspace`: that platform's workspace only
    user: str | None = None  # the platform user id that started it
    workspace: str | None = None  # a Slack team or Discord guild
    before: float | None = None  # ended (or, still running, started) before this time
    finished_only: bool = False  # retention: only debates that ended

    @property
    def empty(self) -> bool:
        return self.debate is None and self.user is None and self.workspace is None and self.before is None


class PurgeTarget(BaseModel):
    """A debate a purge selected, with how many rows of each kind go with it."""

    model_config = ConfigDict(frozen=True)

    id: str
    status: str
    segment: int = 1
    platform: str | None = None
    workspace: str | None = None
    rows: dict[str, int] = {}  # turns, notes, votes, sources (those the log has)


class Forgotten(BaseModel):
    """What `forget_user` did: the debates the person still appeared in, and how many rows changed."""

    model_config = ConfigDict(frozen=True)

    debates: list[tuple[str, int]] = []  # (id, segments) of each ended debate they voted in, wrote a note in or held
    votes: int = 0
    notes: int = 0
    replaced: int = 0  # rows in which their id or a name of theirs was replaced


def _debate_tables(tables: list[TableColumns]) -> list[str]:
    return [t.name for t in tables if "debate_id" in t.columns and t.name not in KEPT_TABLES]


async def purge_targets(c: Conn, selection: PurgeSelection) -> list[PurgeTarget]:
    if selection.empty:
        return []
    where, args = ["true"], {}
    if selection.debate is not None:
        where.append("d.id = :debate")
        args["debate"] = selection.debate
    if selection.user is not None:
        where.append("d.requested_by = :user")
        args["user"] = selection.user
    if selection.workspace is not None:
        where.append("d.workspace = :workspace")
        args["workspace"] = selection.workspace
    if selection.platform is not None:
        where.append("d.platform = :platform")
        args["platform"] = selection.platform
    if selection.before is not None:
        where.append("coalesce(d.finished_at, d.created_at) < :before")
        args["before"] = c.time(selection.before)
    if selection.finished_only:
        where.append("d.status != 'running' and d.finished_at is not null")
    found = await c.rows("select d.id, d.status, d.segment, d.platform, d.workspace from debates d"
                         f" where {' and '.join(where)} order by d.created_at, d.id", args)
    if not found:
        return []
    tables = {t.name for t in await c.tables()}
    marks, ids = in_list("id", [r["id"] for r in found])
    counts: dict[str, dict[str, int]] = {}
    for table, label in _COUNTED.items():
        if table in tables:
            for row in await c.rows(f"select debate_id, count(*) as n from {table} where debate_id in ({marks})"
                                    " group by debate_id", ids):
                counts.setdefault(row["debate_id"], {})[label] = int(row["n"])
    labels = [label for table, label in _COUNTED.items() if table in tables]
    return [PurgeTarget(id=r["id"], status=r["status"], segment=int(r["segment"] or 1), platform=r["platform"],
                        workspace=r["workspace"], rows={k: counts.get(r["id"], {}).get(k, 0) for k in labels})
            for r in found]


async def purge_debate(c: Conn, debate_id: str, reason: Reason, at: float) -> int | None:
    """Delete the debate whole (its spend kept as sums) and leave its tombstone; its segment count (how many
    workflows it ran), or None when it is not in the log (purged already, or never there)."""
    found = await c.rows(f"select status, segment, platform, workspace from debates where id = :id{c.lock}",
                         {"id": debate_id})
    if not found:
        return None
    debate = found[0]
    await keep_usage(c, debate_id)
    for table in _debate_tables(await c.tables()):
        await c.send(f"delete from {table} where debate_id = :id", {"id": debate_id})
    await c.send("update debates set rematch_of = null where rematch_of = :id", {"id": debate_id})
    await c.send("delete from debates where id = :id", {"id": debate_id})
    await c.send_insert("purged_debates", {"id": debate_id, "purged_at": c.time(at), "reason": reason,
                                           "platform": debate["platform"], "workspace": debate["workspace"]},
                        "on conflict (id) do nothing")
    return int(debate["segment"] or 1)


async def purged(c: Conn, debate_id: str) -> dict[str, Any] | None:
    """The tombstone of a purged debate (id, purged_at, reason), or None."""
    rows = await c.rows("select id, purged_at, reason from purged_debates where id = :id", {"id": debate_id})
    return rows[0] | {"purged_at": c.epoch(rows[0]["purged_at"])} if rows else None


_WHY = {"retention": "by retention (DEBATE_RETENTION_DAYS)", "request": "on request (`debate purge`)",
        "uninstall": "when the app was removed from its workspace"}


def purged_text(tomb: dict[str, Any]) -> str:
    """A purged debate in one line: `debate 1a2b3c was purged by retention on 2026-03-01; nothing of it is kept`."""
    day = datetime.fromtimestamp(float(tomb["purged_at"] or 0.0), UTC).strftime("%Y-%m-%d")
    return f"debate {tomb['id']} was purged {_WHY.get(str(tomb['reason']), str(tomb['reason']))} on {day};" \
        " nothing of it is kept"


async def forget_user(c: Conn, user: str) -> Forgotten:
    """Delete `user`'s votes and notes everywhere, and replace their id and the names their notes were shown
    with in every other row (the audit trail excepted). The debates they started are purged before this."""
    args = {"user": user}
    names = [n for n in await c.values("select distinct author from interjections where \"user\" = :user", args)
             if n and n.strip()]
    debates = await c.rows(
        "select id, segment from debates where status != 'running' and (id in (select debate_id from votes"
        " where \"user\" = :user union select debate_id from interjections where \"user\" = :user"
        " union select debate_id from continuations where requested_by = :user)"
        " or held_by = :user or requested_by = :user) order by id", args)
    votes = len(await c.values("delete from votes where \"user\" = :user returning debate_id", args))
    notes = len(await c.values("delete from interjections where \"user\" = :user returning id", args))
    replaced = 0
    needles = sorted({user, *names}, key=len, reverse=True)  # a longer name first: it may hold a shorter one
    for table in await c.tables():
        if table.name in KEPT_TABLES:
            continue
        for column in table.text_columns:
            for needle in needles:
                # inside longer text only when long enough not to be part of other words ("Al" in "Also")
                where = (f'"{column}" != replace("{column}", :needle, :removed)' if len(needle) >= MIN_REPLACED
                         else f'"{column}" = :needle')
                replaced += len(await c.values(
                    f'update {table.name} set "{column}" = replace("{column}", :needle, :removed) where {where}'
                    " returning 1", {"needle": needle, "removed": REMOVED}))
    return Forgotten(debates=[(r["id"], int(r["segment"] or 1)) for r in debates], votes=votes, notes=notes,
                     replaced=replaced)

