"""Which front renders the threads of each workspace: a lease per (platform, workspace), on both databases.

Several fronts of one platform share a log (Slack HTTP fronts behind a load balancer, Discord shards).
All the threads of one workspace (Slack team, Discord guild; '' for none) are written by one front at a
time, the one holding the workspace's row in `thread_renderers` (`renderer`, until `until`), so the
workspace's platform budget is paced in one process. A front claims the workspaces of the threads it
would render, renews them every few seconds, and lets them go when it stops; a front that died stops
renewing, its leases run out and another front takes the workspaces over. Claiming and renewing are one
upsert per workspace inside one write transaction: a lease that is free, run out or the caller's own is
taken or extended, never one another front holds. Workspaces are claimed in sorted order, so two fronts
never wait on each other's rows crosswise.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.log.dialect import Conn, in_list

CHUNK = 400  # workspaces per statement: under SQLite's limit on bound parameters

_CLAIM = """
insert into thread_renderers (platform, workspace, renderer, until) values (:platform, :workspace, :renderer, :until)
on conflict (platform, workspace) do update set renderer = excluded.renderer, until = excluded.until
where thread_renderers.renderer = excluded.renderer or thread_renderers.until < :now
"""


def _chunks(items: Sequence[str]) -> list[list[str]]:
    return [list(items[start:start + CHUNK]) for start in range(0, len(items), CHUNK)]


async def claim_workspaces(c: Conn, renderer: str, platform: str, workspaces: Sequence[str], lease_s: float,
                           at: float) -> list[str]:
    wanted = list(dict.fromkeys(workspaces))
    key = {"platform": platform, "renderer": renderer}
    times = {"until": c.time(at + lease_s), "now": c.time(at)}
    await c.executemany(_CLAIM, [key | times | {"workspace": workspace} for workspace in sorted(wanted)])
    held: set[str] = set()
    for chunk in _chunks(wanted):
        marks, args = in_list("w", chunk)
        held.update(await c.values("select workspace from thread_renderers where platform = :platform"
                                   f" and renderer = :renderer and workspace in ({marks})", key | args))
    return [workspace for workspace in wanted if workspace in held]


async def release_workspaces(c: Conn, renderer: str, platform: str, workspaces: Sequence[str]) -> None:
    for chunk in _chunks(workspaces):
        marks, args = in_list("w", chunk)
        await c.values("delete from thread_renderers where platform = :platform and renderer = :renderer"
                       f" and workspace in ({marks})", {"platform": platform, "renderer": renderer} | args)


async def live_threads(c: Conn, platform: str, root_keys: Sequence[str]) -> list[tuple[str, str]]:
    """(id, workspace: '' for none) of each debate of `platform` whose thread may still change, oldest
    first: those running, and those that ended while one of their `root_keys` records did not show it
    yet (each a few rows of the `messages_not_final` index)."""
    marks, args = in_list("k", list(root_keys))
    marks = marks or "null"  # no keys: no message matches (Postgres refuses an empty list)
    found = await c.rows(f"""
        select id, workspace from (
            select id, coalesce(workspace, '') as workspace, created_at from debates
            where status = 'running' and platform = :platform
            union
            select d.id, coalesce(d.workspace, ''), d.created_at from messages m join debates d on d.id = m.debate_id
            where m.key in ({marks}) and {c.not_final} and d.platform = :platform
        ) live order by created_at, id""", args | {"platform": platform})
    return [(r["id"], r["workspace"]) for r in found]

