"""Workspaces the app was removed from, waiting out DEBATE_UNINSTALL_GRACE_DAYS before their purge
(orchestrator/uninstall.py), and the organization (Slack Enterprise Grid) each workspace belongs to, so an
org-wide install reaches any of its workspaces and its uninstall purges them all. Written once over both
databases."""

from __future__ import annotations

from orchestrator.log.dialect import Conn

# -- uninstalled workspaces waiting out their grace -------------------------------------------------------


async def schedule_uninstall(c: Conn, platform: str, workspace: str, at: float, purge_after: float) -> None:
    await c.send_insert("uninstalls", {"platform": platform, "workspace": workspace, "removed_at": c.time(at),
                                       "purge_after": c.time(purge_after)},
                        "on conflict (platform, workspace) do update set removed_at = excluded.removed_at,"
                        " purge_after = excluded.purge_after")


async def cancel_uninstall(c: Conn, platform: str, workspace: str) -> bool:
    """A reinstall: True when the workspace's data was waiting to be purged (and now stays)."""
    return bool(await c.values("delete from uninstalls where platform = :platform and workspace = :workspace"
                               " returning 1", {"platform": platform, "workspace": workspace}))


async def due_uninstalls(c: Conn, at: float) -> list[tuple[str, str]]:
    """(platform, workspace) of each uninstall whose grace has passed at `at`."""
    return [(r["platform"], r["workspace"]) for r in await c.rows(
        "select platform, workspace from uninstalls where purge_after <= :at order by purge_after",
        {"at": c.time(at)})]


# -- organizations (Slack Enterprise Grid): which workspaces an org-wide install serves ---------------------


async def note_org(c: Conn, platform: str, workspace: str, org: str) -> None:
    await c.send_insert("workspace_orgs", {"platform": platform, "workspace": workspace, "org": org},
                        "on conflict (platform, workspace) do update set org = excluded.org")


async def org_of(c: Conn, platform: str, workspace: str) -> str | None:
    found = await c.one("select org from workspace_orgs where platform = :platform and workspace = :workspace",
                        {"platform": platform, "workspace": workspace})
    return None if found is None else str(found)


async def org_workspaces(c: Conn, platform: str, org: str) -> list[str]:
    return [str(w) for w in await c.values("select workspace from workspace_orgs where platform = :platform"
                                           " and org = :org order by workspace", {"platform": platform, "org": org})]
