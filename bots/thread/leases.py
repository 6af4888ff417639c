"""Which workspaces' threads a front renders: its leases on them in the log (table `thread_renderers`).

Several fronts of one platform may share the log (Slack HTTP fronts behind a load balancer, Discord
shards). All the threads of one workspace (Slack team, Discord guild; '' for none) are rendered by one
front at a time, the one holding the workspace's lease (`DebateLog.claim_workspaces`), so the workspace's
platform budget is paced in one process. `WorkspaceLeases` is one front's side of that: the tailer's
sweep (every `SWEEP_S`) renews what it holds and takes the workspaces of live threads that are free or
whose lease ran out (a front that died) in one claim (`renew`); a debate started between sweeps asks for
its workspace alone (`hold`); closing releases every lease, so another front takes over at once.
`owns(workspace)` limits what is claimed (a Discord shard: its guilds). Claims run one at a time, so
`held` is always what the log said last.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from orchestrator.log import DebateLog

log = logging.getLogger(__name__)

LEASE_S = 15.0  # how long a front holds a workspace's threads without renewing
SWEEP_S = 2.0  # how often it renews and looks for threads to take: well within the lease (≤ LEASE_S / 3)


class WorkspaceLeases:
    """`renderer`: the front's name in the leases, unique among running fronts and stable across
    restarts; `owns(workspace)`: the workspaces it may render."""

    def __init__(self, store: DebateLog, platform: str, renderer: str, owns: Callable[[str], bool],
                 lease_s: float = LEASE_S) -> None:
        self.store = store
        self.platform = platform
        self.renderer = renderer
        self.owns = owns
        self.lease_s = lease_s
        self._held: set[str] = set()  # the workspaces the last claim gave this front
        self._held_until = 0.0  # monotonic: when the earliest of those leases runs out
        self._claiming = asyncio.Lock()

    @property
    def held(self) -> set[str]:
        """The workspaces whose threads this front renders (as of its last claim)."""
        return set(self._held)

    def holds(self, workspace: str) -> bool:
        return workspace in self._held

    async def renew(self, wanted: Callable[[], set[str]]) -> None:
        """Claim exactly the workspaces `wanted()` names (asked once the claim lock is taken, so what a
        `hold` took meanwhile can be in it): renewed, taken, or lost to another front."""
        async with self._claiming:
            await self._claim(wanted())

    async def hold(self, workspace: str) -> bool:
        """Whether this front renders `workspace`'s threads: held by its last claim and not run out, or
        free (or run out) now and taken."""
        if not self.owns(workspace):
            return False
        async with self._claiming:
            if workspace in self._held and time.monotonic() < self._held_until:
                return True
            if time.monotonic() >= self._held_until:  # renew everything held along with it
                await self._claim(self._held | {workspace})
            elif await self.store.claim_workspaces(self.renderer, self.platform, [workspace], self.lease_s):
                self._held.add(workspace)
            return workspace in self._held

    async def release(self, *, tell_log: bool = True) -> None:
        """Hold nothing; with `tell_log`, let go in the log too, so another front takes those threads
        over at once (without, the leases run out, as a front's that died do)."""
        async with self._claiming:
            held, self._held = sorted(self._held), set()
        if tell_log and held:
            try:
                await self.store.release_workspaces(self.renderer, self.platform, held)
            except Exception:
                log.warning("%s: could not release the threads of %d workspace(s); their leases run out",
                            self.platform, len(held), exc_info=True)

    async def _claim(self, workspaces: set[str]) -> None:
        """Claim `workspaces` (under `_claiming`); what the log gives is what this front holds."""
        at = time.monotonic()
        held = await self.store.claim_workspaces(self.renderer, self.platform, sorted(workspaces), self.lease_s)
        self._held, self._held_until = set(held), at + self.lease_s
