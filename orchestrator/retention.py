"""The daily data pass, in every process that runs debates, one process at a time across them all.

Once a day (a lease in the log, orchestrator/log/maintenance.py, says who runs it and when it last ran):
debates that ended more than DEBATE_RETENTION_DAYS ago are purged whole (orchestrator/purge.py; unset:
kept forever), audit entries older than DEBATE_AUDIT_RETENTION_DAYS are deleted, and whatever else is
handed in as a due task runs (an uninstalled workspace's purge once its grace has passed). The clock is
a parameter, so tests move time instead of waiting for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from orchestrator.log import DebateLog
from orchestrator.log.audit import OPERATOR, Actor
from orchestrator.log.purge import PurgeSelection
from orchestrator.purge import EngineRecords, PurgeReport, purge

log = logging.getLogger(__name__)
PASS = "retention"
DAY_S = 86_400.0
HOLD_S = 3_600.0  # a pass still held after this long is taken over: its process died
CHECK_EVERY_S = 3_600.0  # how often each process asks whether the day's pass is due
RETENTION = Actor(platform="retention")  # the audit trail's actor for what the pass deletes


@dataclass
class PassDone:
    """What one pass did."""

    purged: PurgeReport | None = None
    audit_pruned: int = 0
    tasks: int = 0


@dataclass
class Retention:
    store: DebateLog
    holder: str  # this process, unique among those sharing the log
    retention_days: float | None = None
    audit_days: float = 365.0
    engine: EngineRecords | None = None
    clock: Callable[[], float] = time.time
    due: list[Callable[[float], Awaitable[object]]] = field(default_factory=list)  # more work of the pass

    async def run_once(self) -> PassDone | None:
        """The day's pass if it is due and no other process holds it; None otherwise."""
        at = self.clock()
        if not await self.store.claim_pass(PASS, self.holder, at=at, every_s=DAY_S, hold_s=HOLD_S):
            return None
        done = False
        try:
            found = PassDone()
            if self.retention_days is not None:
                found.purged = await purge(self.store, PurgeSelection(before=at - self.retention_days * DAY_S,
                                                                      finished_only=True),
                                           reason="retention", engine=self.engine, at=at, by=RETENTION)
            found.audit_pruned = await self.store.prune_audit(at - self.audit_days * DAY_S)
            for task in self.due:
                await task(at)
                found.tasks += 1
            done = True
            if found.purged is not None and found.purged.purged:
                log.info("retention: %s", found.purged.summary())
            return found
        finally:
            await self.store.end_pass(PASS, self.holder, at=self.clock(), done=done)

    async def run_forever(self, check_every_s: float = CHECK_EVERY_S) -> None:
        """Ask every `check_every_s` whether the day's pass is due; a failure is logged and tried at the next ask."""
        while True:
            try:
                await self.run_once()
            except Exception:
                log.warning("the daily data pass failed; tried again in %.0f s", check_every_s, exc_info=True)
            await asyncio.sleep(check_every_s)


async def audit_budgets(store: DebateLog, budgets: dict[str, float | None]) -> bool:
    """The spend budgets are set in the environment: a process that starts with other values than the audit
    trail last saw writes a `budget` entry (actor `cli`, the operator). True when it wrote one."""
    detail = " ".join(f"{name}={'unset' if value is None else f'{value:g}'}" for name, value in budgets.items())
    if await store.last_audit_detail("budget") == detail:
        return False
    await store.add_audit(OPERATOR.entry("budget", "spend budgets", detail))
    return True
