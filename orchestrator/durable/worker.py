"""WorkerHost: the part of a process that runs debate workflows (`debate worker`, and `debate serve`).

`start` installs the process's Runtime (engine, log, durable steps), launches DBOS inside the running
event loop (so workflows run on it) with this process's executor id, and listens to the debates
queue. Launching also recovers the workflows this executor id left unfinished (a crash, a kill -9):
they are queued again and resume from their last recorded step.

`stop` is the graceful stop (SIGTERM): no new step starts, the steps in flight get up to a grace
period to finish, then what is left is abandoned unrecorded and DBOS shuts down. Nothing is marked
failed or cancelled: every unfinished debate stays pending and resumes at the next launch of this
executor id.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from dbos import DBOS

from orchestrator import heap
from orchestrator.budgets import spend_watch
from orchestrator.config import Settings
from orchestrator.debate.audience import LogAudience
from orchestrator.debate.engine import Engine
from orchestrator.durable.config import dbos_config, prepare_system_db, system_db_url
from orchestrator.durable.continuation import debate_continuation
from orchestrator.durable.steps import Durable
from orchestrator.durable.workflow import QUEUE, Runtime, debate_workflow, install_runtime, register_queue
from orchestrator.log import DebateLog
from orchestrator.metrics import WORKFLOWS_RECOVERED, label_models, prepare_model_metrics
from orchestrator.providers import ProviderRegistry, preload_sdks
from orchestrator.providers.registry import operator_models
from orchestrator.quotas import Budget

log = logging.getLogger(__name__)

GRACE_S = 20.0
# Debates one worker process runs at once unless told (`--concurrency`); the rest wait in the queue.
# DEBATE_MAX_CONCURRENT admits debates across every front; one worker taking all of a large burst at once
# finishes far fewer of them in time than one taking them a bounded number at a time (BENCHMARKS.md).
WORKER_CONCURRENCY = 200

WORKFLOWS = (debate_workflow, debate_continuation)  # what a host runs (importing them registered them with DBOS)


class _AbandonedStepLines(logging.Filter):
    """DBOS warns once for every task cancelled inside a step. A graceful stop cancels the steps still in flight
    on purpose, and says so once itself: with a hundred debates running, DBOS's two lines a debate would bury it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Asyncio task cancelled for workflow or step")


_ABANDONED_STEP_LINES = _AbandonedStepLines()


class WorkerHost:
    """`await host.start()` … `await host.stop()`; one per process (DBOS is a process-wide singleton)."""

    def __init__(
        self,
        settings: Settings,
        store: DebateLog,
        registry: ProviderRegistry,
        *,
        executor_id: str,
        concurrency: int | None = None,
        db_url: str | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.registry = registry
        self.executor_id = executor_id
        self.concurrency = concurrency or min(settings.debate_max_concurrent, WORKER_CONCURRENCY)
        self.db_url = db_url or system_db_url(settings)
        self.steps = Durable()
        self._started = False

    async def start(self) -> None:
        # the SDKs' imports are slow: done now, off the loop, not by the first debate after a (re)start
        await preload_sdks()
        prepare_model_metrics(self.registry.configured())
        label_models([*operator_models(self.settings), *self.registry.configured_cli_tools()])
        prepare_system_db(self.db_url)
        spend = spend_watch(self.store, Budget.from_settings(self.settings))
        engine = Engine(self.registry, self.settings, spend=spend)
        install_runtime(Runtime(engine=engine, log=self.store, steps=self.steps,
                                audience=LogAudience(self.store)))
        DBOS(config=dbos_config(self.db_url, self.executor_id))
        DBOS.listen_queues([QUEUE])
        heap.settle()  # what start-up built, out of every full collection from now on (heap.py)
        launched = datetime.now(UTC).isoformat()
        DBOS.launch()  # in the running loop: dequeued and recovered workflows run on it
        self._started = True
        await self._count_recovered(launched)
        await register_queue(self.concurrency)

    async def _count_recovered(self, launched: str) -> None:
        """Count, in the metrics, the workflows this executor left pending that the launch resumed."""
        try:
            pending = await DBOS.list_workflows_async(status="PENDING", executor_id=self.executor_id,
                                                      end_time=launched, load_input=False, load_output=False)
        except Exception:  # a count must not keep the worker from serving
            log.warning("could not count the recovered workflows", exc_info=True)
            return
        if pending:
            log.info("resumed %d unfinished debate workflow(s)", len(pending))
            WORKFLOWS_RECOVERED.inc(len(pending))

    async def stop(self, grace_s: float = GRACE_S) -> None:
        """Let the steps in flight finish (up to `grace_s`), then shut DBOS down, recording nothing more."""
        if not self._started:
            return
        self._started = False
        self.steps.drain()
        if not await self.steps.idle(grace_s):
            log.warning("stopping with model calls in flight: they run again when their debates resume")
        logging.getLogger("dbos").addFilter(_ABANDONED_STEP_LINES)  # the process is stopping: for good
        await self.steps.abandon()
        # DBOS made its thread pool this loop's default executor and shuts it: give the loop its own
        # first, and shut DBOS down from it (off the loop: DBOS joins threads that may call into it)
        pool = ThreadPoolExecutor(thread_name_prefix="asyncio")
        loop = asyncio.get_running_loop()
        loop.set_default_executor(pool)
        await loop.run_in_executor(pool, DBOS.destroy)
        install_runtime(None)
