"""The core's services wired together once, in main(), and handed to every adapter."""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.config import Settings
from orchestrator.debate.engine import Engine
from orchestrator.debate.jobs import DebateJobs
from orchestrator.log.store import DebateRecord, Store
from orchestrator.models import Outcome
from orchestrator.providers.registry import ProviderRegistry

RESTART_NOTICE = "Interrupted by a restart — run it again with /debate …"


@dataclass
class Core:
    settings: Settings
    store: Store
    registry: ProviderRegistry
    engine: Engine
    jobs: DebateJobs
    # debates a restart cut off (failed by `store.mark_interrupted`); each adapter shows it on their root messages
    interrupted: list[str] = field(default_factory=list)

    @classmethod
    async def open(cls, settings: Settings) -> Core:
        store = Store(settings.debate_db, redact=_redactor(settings))
        await store.start()
        interrupted = await store.mark_interrupted()
        registry = ProviderRegistry(settings)
        engine = Engine(registry, settings)
        jobs = DebateJobs(engine, store, max_concurrent=settings.debate_max_concurrent)
        return cls(settings=settings, store=store, registry=registry, engine=engine, jobs=jobs,
                   interrupted=interrupted)

    async def interrupted_outcome(self, record: DebateRecord) -> Outcome:
        """How an interrupted debate ended, for its root message: failed, with what its turns used."""
        totals = await self.store.token_totals(record.id)
        return Outcome(status="failed", rounds_completed=record.rounds_completed, rounds_planned=record.rounds_planned,
                       input_tokens=totals.input_tokens, output_tokens=totals.output_tokens,
                       cost_usd=totals.cost_usd, error=RESTART_NOTICE)

    async def close(self) -> None:
        await self.jobs.shutdown()
        await self.registry.aclose()
        await self.store.close()

    async def __aenter__(self) -> Core:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _redactor(settings: Settings):
    from orchestrator.safety import make_redactor

    return make_redactor(settings.secrets())
