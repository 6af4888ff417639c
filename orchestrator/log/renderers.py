"""Which front renders the threads of each workspace, in the SQLite log: a lease per (platform, workspace).

Several fronts of one platform share a log (Slack HTTP fronts behind a load balancer, Discord shards).
All the threads of one workspace (Slack team, Discord guild; '' for none) are written by one front at a
time, the one holding the workspace's row in `thread_renderers` (`renderer`, until `until`), so the
workspace's platform budget is paced in one process. A front claims the workspaces of the threads it
would render, renews them every few seconds, and lets them go when it stops; a front that died stops
renewing, its leases run out and another front takes the workspaces over. Claiming and renewing are one
upsert per workspace inside one write transaction: a lease that is free, run out or the caller's own is
taken or extended, never one another front holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlite_utils import Database

from orchestrator.log.records import to_iso

CHUNK = 400  # workspaces per statement: under SQLite's limit on bound parameters

_CLAIM = """
insert into thread_renderers (platform, workspace, renderer, until) values (?, ?, ?, ?)
on conflict (platform, workspace) do update set renderer = excluded.renderer, until = excluded.until
where thread_renderers.renderer = excluded.renderer or thread_renderers.until < ?
"""


def claim_workspaces(renderer: str, platform: str, workspaces: Sequence[str], lease_s: float,
                     at: float) -> Callable[[Database], list[str]]:
    def fn(db: Database) -> list[str]:
        wanted = list(dict.fromkeys(workspaces))
        until, now = to_iso(at + lease_s), to_iso(at)
        db.conn.executemany(_CLAIM, [(platform, workspace, renderer, until, now) for workspace in wanted])
        held: set[str] = set()
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start:start + CHUNK]
            marks = ",".join("?" * len(chunk))
            held.update(row[0] for row in db.execute(
                "select workspace from thread_renderers where platform = ? and renderer = ?"
                f" and workspace in ({marks})", [platform, renderer, *chunk]))
        return [workspace for workspace in wanted if workspace in held]

    return fn


def release_workspaces(renderer: str, platform: str, workspaces: Sequence[str]) -> Callable[[Database], None]:
    def fn(db: Database) -> None:
        for start in range(0, len(workspaces), CHUNK):
            chunk = list(workspaces[start:start + CHUNK])
            marks = ",".join("?" * len(chunk))
            db.execute(f"delete from thread_renderers where platform = ? and renderer = ? and workspace in ({marks})",
                       [platform, renderer, *chunk])

    return fn


def live_threads(db: Database, platform: str, root_keys: Sequence[str]) -> list[tuple[str, str]]:
    """(id, workspace: '' for none) of each debate of `platform` whose thread may still change, oldest
    first: those running, and those that ended while one of their `root_keys` records did not show it
    yet (each a few rows of the `messages_not_final` index)."""
    marks = ",".join("?" * len(root_keys))
    rows = db.execute(
        f"""select id, coalesce(workspace, ''), created_at from debates where status = 'running' and platform = ?
            union
            select d.id, coalesce(d.workspace, ''), d.created_at from messages m join debates d on d.id = m.debate_id
            where m.key in ({marks}) and m.final = 0 and d.platform = ?
            order by 3, 1""",
        [platform, *root_keys, platform],
    ).fetchall()
    return [(r[0], r[1]) for r in rows]
