"""Purging, as one use case: `debate purge`, the retention pass and an uninstall all come through `purge`.

The order is the one that leaves nothing half-gone: the debates are read, those still running stopped (their
workflows cancelled, the log told they were cancelled), then each debate is deleted from the log in one
transaction of its own (orchestrator/log/purge.py) and only after it the workflow engine's records of it
(its inputs, steps and streams hold the same text). Interrupted anywhere, every debate is whole or gone
from the log, and a workflow record left behind names a debate the log no longer has (a purge run again
deletes it: the tombstone keeps the id). A person's purge then removes them from the debates that stay.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from orchestrator.log import DebateLog
from orchestrator.log.audit import OPERATOR, Actor
from orchestrator.log.purge import Forgotten, PurgeSelection, PurgeTarget, Reason
from orchestrator.models import Outcome, now

log = logging.getLogger(__name__)
STOPPED_FOR_PURGE = "stopped: its data is being deleted"


class EngineRecords(Protocol):
    """The workflow engine's side of a purge (orchestrator/durable/purge_records.py)."""

    async def cancel(self, debate_id: str, segment: int) -> None:
        """Stop the debate's running segment."""

    async def delete(self, debates: Sequence[tuple[str, int]]) -> None:
        """Delete the records of each (debate id, segments it ran): every segment's workflow."""


class PurgeReport(BaseModel):
    """What a purge selected and what it did (a dry run: nothing)."""

    model_config = ConfigDict(frozen=True)

    dry_run: bool
    reason: Reason
    debates: list[PurgeTarget]
    stopped: list[str] = []
    purged: list[str] = []
    user: str | None = None
    forgotten: Forgotten | None = None

    def summary(self) -> str:
        """What went, in one line: `retention: 3 debates, 12 turns, 2 notes, 5 votes`."""
        counts = ", ".join(f"{n} {kind}" for kind, n in self.totals.items())
        forgotten = "" if self.forgotten is None else (
            f"; the person removed from {len(self.forgotten.debates)} other debates ({self.forgotten.votes} votes,"
            f" {self.forgotten.notes} notes deleted)")
        return f"{self.reason}: {counts}{forgotten}"

    @property
    def totals(self) -> dict[str, int]:
        """Rows of each kind that go with the debates (turns, notes, votes, sources), and the debates."""
        sums: dict[str, int] = {"debates": len(self.debates)}
        for target in self.debates:
            for kind, n in target.rows.items():
                sums[kind] = sums.get(kind, 0) + n
        return sums


async def purge(store: DebateLog, selection: PurgeSelection, *, reason: Reason = "request",
                engine: EngineRecords | None = None, dry_run: bool = False, at: float | None = None,
                by: Actor = OPERATOR) -> PurgeReport:
    """Delete the debates `selection` picks (and with `selection.user`, that person everywhere else), and
    write the audit entry `by` did it. `engine` None: the log only (no workflow engine shares it, as with
    `debate run` alone)."""
    targets = await store.purge_targets(selection)
    if dry_run:
        return PurgeReport(dry_run=True, reason=reason, debates=targets, user=selection.user)
    stopped: list[str] = []
    for target in targets:
        if target.status == "running":
            await _stop(store, engine, target)
            stopped.append(target.id)
    purged: list[str] = []
    for target in targets:
        segments = await store.purge_debate(target.id, reason, at=at)
        if segments is not None:
            purged.append(target.id)
            if engine is not None:
                await engine.delete([(target.id, segments)])
    forgotten = None
    if selection.user is not None:
        forgotten = await store.forget_user(selection.user)
        if engine is not None and forgotten.debates:
            await engine.delete(forgotten.debates)
    report = PurgeReport(dry_run=False, reason=reason, debates=targets, stopped=stopped, purged=purged,
                         user=selection.user, forgotten=forgotten)
    if purged or forgotten is not None:
        await store.add_audit(by.entry("purge", described(selection), report.summary(), at=at))
    return report


def described(selection: PurgeSelection) -> str:
    """The selection in words, for the audit trail: `debate ID`, `user U`, `workspace T`, `before DATE`."""
    parts = [f"{name} {value}" for name, value in (("debate", selection.debate), ("user", selection.user),
                                                    ("workspace", selection.workspace)) if value is not None]
    if selection.before is not None:
        parts.append(f"before {datetime.fromtimestamp(selection.before, UTC).strftime('%Y-%m-%d %H:%M')} UTC")
    return ", ".join(parts)


async def _stop(store: DebateLog, engine: EngineRecords | None, target: PurgeTarget) -> None:
    if engine is not None:
        try:
            await engine.cancel(target.id, target.segment)
        except Exception:  # a debate `debate run` runs has no workflow: the log's end stops its writes
            log.info("debate %s: no workflow to cancel before its purge", target.id, exc_info=True)
    await store.finish_debate(target.id, Outcome(status="cancelled", error=STOPPED_FOR_PURGE), at=now())
