"""The core's services wired together once, in main(), and handed to every adapter.

Three ways to open it, one per kind of process:
- `serve` (`debate serve`): writes the log, runs debates, and at start fails the debates this host's
  serving process left "running" when it stopped (`interrupted`); each adapter shows that on their
  root messages. Only this role recovers anything.
- `run` (`debate run`): writes the log and runs debates under its own runner name
  (`cli:<host>:<pid>`), recovers nothing.
- `read` (`history`, `show`, `search`, `export`, `discord-sync`): the log opened read-only; never
  changes it, whatever else is running.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Literal

from orchestrator.config import Settings
from orchestrator.debate.engine import Engine
from orchestrator.debate.jobs import DebateJobs
from orchestrator.log import DebateLog, DebateRecord, open_log
from orchestrator.models import Outcome
from orchestrator.providers import ProviderRegistry

RESTART_NOTICE = "Interrupted by a restart — run it again with /debate …"
Role = Literal["serve", "run", "read"]


def runner_name(role: Role) -> str | None:
    """Who owns the debates this process starts: one name per serving host, one per CLI process."""
    host = socket.gethostname()
    if role == "serve":
        return f"serve:{host}"
    if role == "run":
        return f"cli:{host}:{os.getpid()}"
    return None


@dataclass
class Core:
    settings: Settings
    store: DebateLog
    registry: ProviderRegistry
    engine: Engine
    jobs: DebateJobs
    role: Role = "serve"
    # debates this runner left running when it stopped, failed at open (serve only); each adapter shows it
    interrupted: list[str] = field(default_factory=list)

    @classmethod
    async def open(cls, settings: Settings, role: Role = "serve") -> Core:
        store = open_log(settings.debate_db, runner=runner_name(role), readonly=role == "read")
        await store.start()
        interrupted = await store.mark_interrupted() if role == "serve" else []
        registry = ProviderRegistry(settings)
        engine = Engine(registry, settings)
        jobs = DebateJobs(engine, store, max_concurrent=settings.debate_max_concurrent)
        return cls(settings=settings, store=store, registry=registry, engine=engine, jobs=jobs, role=role,
                   interrupted=interrupted)

    @staticmethod
    def interrupted_outcome(record: DebateRecord) -> Outcome:
        """How an interrupted debate ended, for its root message: failed, with what its turns used."""
        return Outcome(status="failed", rounds_completed=record.rounds_completed, rounds_planned=record.rounds_planned,
                       input_tokens=record.input_tokens, output_tokens=record.output_tokens,
                       cost_usd=record.cost_usd, error=RESTART_NOTICE)

    async def close(self) -> None:
        await self.jobs.shutdown()
        await self.registry.aclose()
        await self.store.close()

    async def __aenter__(self) -> Core:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
