"""The core's services wired together once, in main(), and handed to every adapter.

One way to open it per kind of process (`Role`):
- `serve` (`debate serve`): a front and a worker in one process. It launches DBOS with the executor
  `serve-<host>` (`host`: recovering, at launch, the debates this executor left unfinished) and talks
  to the workflows through a `FrontFeed` (`feed`), exactly as a front on its own does.
- `front` (`debate serve --front-only`): the feed only. It never launches DBOS, so it runs and
  recovers no debate; the workers do.
- `worker` (`debate worker`): the host only (executor `worker-<name>`), no platform, no feed.
- `run` (`debate run`): debates run directly in this process (`jobs`, Direct steps), under their own
  runner name; nothing durable, nothing recovered.
- `read` (`history`, `show`, `search`, `export`, `discord-sync`): the log opened read-only; never
  changes it and never touches the workflow database, whatever else is running.

No durable role fails its own "running" debates at start: their workflows resume (one the log stopped
resumes at the step that writes its failure to the log, retried until the log accepts it). A
debate a front shows as running without a workflow behind it is failed by the front's tailer
(`bots.thread.tail`), with a message in its thread. Every role that writes sweeps, at start, the
debates of `debate run` processes on this host that are gone (`sweep_dead_runs`): nothing resumes
those, and a debate left "running" would hold its quota slot for hours. Importing DBOS costs ~0.4 s: only the durable
roles import `orchestrator.durable`, inside `open`.
"""

from __future__ import annotations

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
from orchestrator.quotas import Quota

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
                core.host = WorkerHost(settings, store, registry, executor_id=executor, concurrency=concurrency,
                                       reads_streams=role == "serve")  # a worker alone reads no stream
                await core.host.start()
            if role in ("serve", "front"):
                from orchestrator.durable import FrontFeed

                core.feed = await FrontFeed.open(settings)
        except BaseException:
            await core.close()
            raise
        return core

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
