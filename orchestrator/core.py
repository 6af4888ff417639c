"""The core's services wired together once, in main(), and handed to every adapter."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.config import Settings
from orchestrator.engine import Engine
from orchestrator.jobs import DebateJobs
from orchestrator.providers.registry import ProviderRegistry
from orchestrator.store import Store


@dataclass
class Core:
    settings: Settings
    store: Store
    registry: ProviderRegistry
    engine: Engine
    jobs: DebateJobs

    @classmethod
    async def open(cls, settings: Settings) -> Core:
        store = Store(settings.debate_db, redact=_redactor(settings))
        await store.start()
        await store.mark_interrupted()
        registry = ProviderRegistry(settings)
        engine = Engine(registry, settings)
        jobs = DebateJobs(engine, store, max_concurrent=settings.debate_max_concurrent)
        return cls(settings=settings, store=store, registry=registry, engine=engine, jobs=jobs)

    async def close(self) -> None:
        await self.jobs.shutdown()
        await self.registry.aclose()
        await self.store.close()

    async def __aenter__(self) -> Core:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _redactor(settings: Settings):
    from orchestrator.redaction import make_redactor

    return make_redactor(settings.secrets())
