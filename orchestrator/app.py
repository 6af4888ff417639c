"""The core's services wired together once, in main(), and handed to every adapter.

One way to open it per kind of process (`Role`): `serve` (`debate serve`: a front and a worker in one process, DBOS
launched as executor `serve-<host>`, recovering at launch what it left unfinished, and talking to its workflows
through a `FrontFeed` as a lone front does); `front` (`--front-only`: the feed only, never launching DBOS, running
and recovering no debate); `worker` (`debate worker`: the host only, executor `worker-<name>`); `run` (`debate run`:
debates run directly in this process, nothing durable); `read` (history, show, search, export, discord-sync: the log
read-only, the workflow database never touched).

No durable role fails its own "running" debates at start: their workflows resume. A debate a front shows as running
without a workflow behind it is failed by the front's tailer (`bots.thread.tail`). Every role that writes sweeps, at
start, the debates of gone `debate run` processes on this host (`sweep_dead_runs`): nothing resumes those, and they
would hold their quota slots. Only the durable roles import `orchestrator.durable` (DBOS is slow to import), in `open`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from orchestrator.config import Settings
from orchestrator.debate.engine import Engine
from orchestrator.debate.jobs import DebateJobs
from orchestrator.log import DebateLog, open_log
from orchestrator.models import DebateSpec, Outcome
from orchestrator.operations import Operations
from orchestrator.providers import ProviderRegistry, preload_sdks
from orchestrator.purge import EngineRecords, PurgeReport
from orchestrator.quotas import Quota
from orchestrator.retention import Retention, audit_budgets
from orchestrator.uninstall import Stop, purge_due, workspace_added, workspace_removed

if TYPE_CHECKING:
    from orchestrator.durable import FrontFeed, WorkerHost

log = logging.getLogger(__name__)

Role = Literal["serve", "front", "worker", "run", "read"]
DURABLE_ROLES: tuple[Role, ...] = ("serve", "front", "worker")
RESTARTING = "The bot is restarting; try again in a minute."
LOG_UNAVAILABLE = ("The debate log cannot be written right now (its database is locked or unreachable), so that did "
                   "not run; please try again in a few minutes.")
NOT_A_FRONT = "This process takes no debates (it is not a front); see README, Restarts and deploys."
RUN_CUT_OFF = ("Debate failed: the `debate run` process running it stopped before its end was logged "
               "(start it again).")
STOP_GRACE_S = 20.0  # how long a stopping worker lets the model calls in flight finish


def runner_name(role: Role, name: str | None = None) -> str | None:
    """Who admitted or runs the debates this process logs: one name per host and role, one per CLI process."""
    host = socket.gethostname()
    if role == "run":
        return f"cli:{host}:{os.getpid()}"
    if role == "read":
        return None
    return f"{role}:{name or host}"


def renderer_name(name: str | None = None) -> str:
    """Which front renders threads, in the log's leases on workspaces (`front:<name>`, default the host):
    unique among running fronts and stable across a front's restarts (`debate serve --name`), so a
    restarted front takes its own workspaces back at once."""
    return f"front:{name or socket.gethostname()}"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


async def sweep_dead_runs(store: DebateLog) -> list[str]:
    """Fail the debates that `debate run` processes of this host left running and that are gone (a kill,
    or an exit while the log could not take the failure); returns their ids. Best effort: a log that
    cannot be read or written now is swept at the next start."""
    prefix = f"cli:{socket.gethostname()}:"
    failed: list[str] = []
    try:
        for runner in await store.running_runners(prefix):
            pid = runner.removeprefix(prefix)
            if pid.isdigit() and int(pid) != os.getpid() and not _process_alive(int(pid)):
                failed += await store.fail_runner(runner, RUN_CUT_OFF)
    except Exception:
        log.warning("could not sweep the debates of stopped `debate run` processes; again at the next start",
                    exc_info=True)
    if failed:
        log.info("failed %d debate(s) left running by stopped `debate run` processes", len(failed))
    return failed


@dataclass
class Core(Operations):
    """The core's services, and the operations the adapters call (`Operations`: never the log itself)."""

    settings: Settings
    store: DebateLog
    registry: ProviderRegistry
    engine: Engine
    role: Role = "serve"
    jobs: DebateJobs | None = None  # `run` only: debates in this process
    host: WorkerHost | None = None  # `serve`, `worker`: runs the debate workflows
    feed: FrontFeed | None = None  # `serve`, `front`: enqueues, stops and follows them
    stopping: bool = False  # a stop began: no new debate is taken
    name: str | None = None  # `debate serve --name` / `debate worker --name`; None: the host's
    retention: Retention | None = None  # `serve`, `worker`: the daily data pass (orchestrator/retention.py)
    _retention_task: asyncio.Task[None] | None = None

    async def warm_up(self) -> None:
        """Before a chat surface serves: a process that runs debates on its own loop (`jobs`) imports the
        model SDKs now, off the loop, so a first `/debate` does not wait seconds for them. A worker host
        does this when it starts; a front never makes a model's client (`ProviderRegistry.check`)."""
        if self.jobs is not None:
            await preload_sdks()

    @property
    def renderer(self) -> str:
        """This front's name in the leases on the workspaces whose threads it renders."""
        return renderer_name(self.name)

    @classmethod
    async def open(cls, settings: Settings, role: Role = "serve", *, name: str | None = None,
                   concurrency: int | None = None) -> Core:
        """`name`: the process's (`debate serve --name`, `debate worker --name`; default the host): its
        executor id, and a front's name in the thread leases; `concurrency`: debates at once in this
        process's worker (default DEBATE_MAX_CONCURRENT, at most WORKER_CONCURRENCY)."""
        store = open_log(settings.debate_database_url or settings.debate_db, runner=runner_name(role, name),
                         readonly=role == "read")
        await store.start()
        if role != "read":
            await sweep_dead_runs(store)
        registry = ProviderRegistry(settings)
        engine = Engine(registry, settings)
        core = cls(settings=settings, store=store, registry=registry, engine=engine, role=role, name=name)
        try:
            if role == "run":
                core.jobs = DebateJobs(engine, store, max_concurrent=settings.debate_max_concurrent)
            if role in ("serve", "worker"):
                from orchestrator.durable import WorkerHost, executor_id

                executor = executor_id("serve" if role == "serve" else "worker", name)
                core.host = WorkerHost(settings, store, registry, executor_id=executor, concurrency=concurrency)
                await core.host.start()
            if role in ("serve", "front"):
                from orchestrator.durable import FrontFeed

                core.feed = await FrontFeed.open(settings)
            if role in ("serve", "worker"):
                await core.audit_budgets()
                core.start_retention()
        except BaseException:
            await core.close()
            raise
        return core

    async def audit_budgets(self) -> None:
        """A budget changed since the audit trail last saw it (they are set in the environment): say so there."""
        from orchestrator.budgets import VARIABLES

        s = self.settings
        values = {"workspace_day": s.debate_budget_usd_per_workspace_day, "user_day": s.debate_budget_usd_per_user_day,
                  "month": s.debate_budget_usd_per_month}
        try:
            await audit_budgets(self.store, {VARIABLES[window]: value for window, value in values.items()})
        except Exception:  # the trail misses one entry; the process serves anyway
            log.warning("could not write the budgets to the audit trail", exc_info=True)

    @property
    def engine_records(self) -> EngineRecords | None:
        """What a purge deletes of the workflow engine's: through the feed's client (a front), or the launched
        DBOS (a worker); None where no workflow runs (`debate run`)."""
        from orchestrator.durable.purge_records import ClientRecords, LaunchedRecords

        if self.feed is not None:
            return ClientRecords(self.feed.client)
        return LaunchedRecords() if self.host is not None else None

    def start_retention(self) -> None:
        """The daily data pass of a process that runs debates (one at a time across them, by the log's lease):
        retention, the audit trail's pruning, and the due purges of uninstalled workspaces."""
        engine = self.engine_records
        self.retention = Retention(self.store, holder=f"{self.store.runner or 'core'}:{os.getpid()}",
                                   retention_days=self.settings.debate_retention_days,
                                   audit_days=self.settings.debate_audit_retention_days, engine=engine,
                                   due=[lambda at: purge_due(self.store, engine, at)])
        self._retention_task = asyncio.create_task(self.retention.run_forever(), name="retention")

    async def workspace_removed(self, platform: str, workspace: str, *, stop: Stop | None = None,
                                detail: str = "") -> PurgeReport | None:
        """The app was removed from `workspace` (its tokens deleted already): stop its debates, and purge its
        data now or after DEBATE_UNINSTALL_GRACE_DAYS (orchestrator/uninstall.py)."""
        return await workspace_removed(self.store, platform, workspace, engine=self.engine_records, stop=stop,
                                       grace_days=self.settings.debate_uninstall_grace_days, detail=detail)

    async def workspace_added(self, platform: str, workspace: str, *, by: str | None = None) -> bool:
        """Installed (again): a purge waiting out its grace is dropped; True when one was."""
        return await workspace_added(self.store, platform, workspace, by=by)

    @property
    def executor(self) -> str | None:
        return None if self.host is None else self.host.executor_id

    async def admit(self, spec: DebateSpec, quota: Quota | None = None) -> None:
        """Reserve the debate's slot in the log, or raise QuotaExceeded (nothing logged, nothing to undo).
        `quota`: a chat user's (`Quota.from_settings`); None is the operator, held to the global cap only."""
        await self.store.admit(spec, quota or Quota.operator(self.settings.debate_max_concurrent))

    async def abandon(self, debate_id: str, reason: str) -> None:
        """An admitted debate that will not start: it ends failed, with `reason`, and holds no slot."""
        await self.store.finish_debate(debate_id, Outcome(status="failed", error=reason))

    async def stop_workers(self, grace_s: float = STOP_GRACE_S) -> None:
        """The graceful stop of this process's worker: no new step starts, the model calls in flight get
        `grace_s` to finish, and nothing is marked failed (the debates resume at the next launch)."""
        self.stopping = True
        if self.host is not None:
            host, self.host = self.host, None
            await host.stop(grace_s)

    async def close(self) -> None:
        if self._retention_task is not None:
            task, self._retention_task = self._retention_task, None
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self.jobs is not None:
            await self.jobs.shutdown()
        if self.host is not None:
            await self.stop_workers()
        if self.feed is not None:
            feed, self.feed = self.feed, None
            await feed.close()
        await self.registry.aclose()
        await self.store.close()

    async def __aenter__(self) -> Core:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
