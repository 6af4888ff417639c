"""The app removed from a workspace (Slack `app_uninstalled` / `tokens_revoked`, Discord's guild removal) and
added back, as one use case for every platform.

Removed: the audit trail says so, the workspace's running debates are stopped at once (`stop`: the platform's
own stop, which also ends the thread; else the workflow is cancelled and the log told), and its data is purged
(orchestrator/purge.py) at once when DEBATE_UNINSTALL_GRACE_DAYS is 0, else by the first daily pass after the
grace (`purge_due`, run by orchestrator/retention.py). Added back within the grace: the waiting purge is dropped,
and the data stays. Deleting the platform's tokens is the platform's (it must happen before anything else).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from orchestrator.log import DebateLog
from orchestrator.log.audit import Actor
from orchestrator.log.purge import PurgeSelection
from orchestrator.models import Outcome, now
from orchestrator.purge import STOPPED_FOR_PURGE, EngineRecords, PurgeReport, purge
from orchestrator.retention import DAY_S

log = logging.getLogger(__name__)
Stop = Callable[[str], Awaitable[object]]


async def workspace_removed(store: DebateLog, platform: str, workspace: str, *, grace_days: float,
                            engine: EngineRecords | None, stop: Stop | None = None, at: float | None = None,
                            detail: str = "") -> PurgeReport | None:
    """What follows the app's removal from `workspace`; the purge's report when it purged at once."""
    at = now() if at is None else at
    by = Actor(platform=platform, workspace=workspace)
    when = f"data purged after {grace_days:g} days" if grace_days > 0 else "data purged at once"
    await store.add_audit(by.entry("uninstall", f"{platform} workspace {workspace}",
                                   f"{detail}; {when}" if detail else when, at=at))
    selection = PurgeSelection(platform=platform, workspace=workspace)
    for target in await store.purge_targets(selection):
        if target.status != "running":
            continue
        try:
            if stop is not None:
                await stop(target.id)
            else:
                if engine is not None:
                    await engine.cancel(target.id, target.segment)
                await store.finish_debate(target.id, Outcome(status="cancelled", error=STOPPED_FOR_PURGE))
        except Exception:  # the purge stops it anyway (orchestrator/purge.py)
            log.warning("%s: could not stop debate %s of a removed workspace", platform, target.id, exc_info=True)
    if grace_days <= 0:
        return await purge(store, selection, reason="uninstall", engine=engine, at=at, by=by)
    await store.schedule_uninstall(platform, workspace, at=at, purge_after=at + grace_days * DAY_S)
    return None


async def workspace_added(store: DebateLog, platform: str, workspace: str, *, by: str | None = None,
                          at: float | None = None) -> bool:
    """The app installed in (or added back to) `workspace`; True when a waiting purge was dropped."""
    kept = await store.cancel_uninstall(platform, workspace)
    await store.add_audit(Actor(platform=platform, workspace=workspace, user=by).entry(
        "install", f"{platform} workspace {workspace}",
        "added back within the grace: its data stays" if kept else "", at=at))
    return kept


async def purge_due(store: DebateLog, engine: EngineRecords | None, at: float) -> list[PurgeReport]:
    """Purge each removed workspace whose grace has passed (the daily pass)."""
    reports = []
    for platform, workspace in await store.due_uninstalls(at):
        by = Actor(platform=platform, workspace=workspace)
        reports.append(await purge(store, PurgeSelection(platform=platform, workspace=workspace), reason="uninstall",
                                   engine=engine, at=at, by=by))
        await store.cancel_uninstall(platform, workspace)
    return reports
