"""Which front renders the threads of each workspace, in the Postgres log: the twin of ../renderers.py.

One `insert … on conflict do update … where` claims and renews: Postgres takes each workspace's row lock,
so of two fronts claiming at once the second sees the first's lease and leaves it. Workspaces are
claimed in sorted order (two fronts never wait on each other's rows crosswise), and leases are timed by
the server's clock, the one clock every host shares.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.log.postgres.reads import Conn, values

_CLAIM = """
insert into thread_renderers (platform, workspace, renderer, until)
select %(platform)s, workspace, %(renderer)s, now() + make_interval(secs => %(lease)s)
from unnest(%(workspaces)s::text[]) as workspace
on conflict (platform, workspace) do update set renderer = excluded.renderer, until = excluded.until
where thread_renderers.renderer = excluded.renderer or thread_renderers.until < now()
returning workspace
"""


async def claim_workspaces(conn: Conn, renderer: str, platform: str, workspaces: Sequence[str],
                           lease_s: float) -> list[str]:
    held = set(await values(conn, _CLAIM, {"platform": platform, "renderer": renderer, "lease": lease_s,
                                           "workspaces": sorted(set(workspaces))}))
    return [workspace for workspace in dict.fromkeys(workspaces) if workspace in held]


async def release_workspaces(conn: Conn, renderer: str, platform: str, workspaces: Sequence[str]) -> None:
    await conn.execute("delete from thread_renderers where platform = %s and renderer = %s and workspace = any(%s)",
                       [platform, renderer, list(workspaces)])


async def live_threads(conn: Conn, platform: str, root_keys: Sequence[str]) -> list[tuple[str, str]]:
    """(id, workspace: '' for none) of each debate of `platform` whose thread may still change, oldest first."""
    cur = await conn.execute(
        """select id, workspace from (
               select id, coalesce(workspace, '') as workspace, created_at from debates
               where status = 'running' and platform = %(platform)s
               union
               select d.id, coalesce(d.workspace, ''), d.created_at from messages m join debates d on d.id = m.debate_id
               where m.key = any(%(keys)s) and not m.final and d.platform = %(platform)s
           ) live order by created_at, id""",
        {"platform": platform, "keys": list(root_keys)})
    return [(row[0], row[1]) for row in await cur.fetchall()]
