"""Run the real engine, through the real SDKs, against the loopback LLM server; collect every event."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.config import Settings
from orchestrator.debate.engine import Engine
from orchestrator.events import EventBase, EventBus, Notice, TurnCompleted, TurnFailed
from orchestrator.log import Store, StoreSink
from orchestrator.models import DebateSpec, Outcome, Seat, Turn
from orchestrator.providers import ProviderRegistry
from tests.fakes.llm_server import FakeLLMServer, RequestRecord

JUDGE = "openai:judge"
LABELS = "ABCD"


@dataclass
class CollectingSink:
    events: list[EventBase] = field(default_factory=list)

    async def handle(self, event: EventBase) -> None:
        self.events.append(event)


@dataclass
class Result:
    outcome: Outcome
    events: list[EventBase]

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]  # type: ignore[attr-defined]

    @property
    def turns(self) -> list[Turn]:
        return [e.turn for e in self.events if isinstance(e, TurnCompleted | TurnFailed)]

    def notices(self, level: str | None = None) -> list[str]:
        return [e.text for e in self.of(Notice) if level is None or e.level == level]


def settings_for(srv: FakeLLMServer, *, timeout: float = 10.0, env: dict[str, str] | None = None) -> Settings:
    """OpenAI on the loopback peer; `env` adds settings (another provider pointed at it, …) or overrides these."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        OPENAI_API_KEY="sk-test-secret-0123456789",
        OPENAI_BASE_URL=srv.openai_base_url,
        **({"DEBATE_MAX_RETRIES": 0, "DEBATE_CALL_TIMEOUT": timeout} | (env or {})),
    )


def make_spec(
    fmt: str,
    models: tuple[str, ...] = ("openai:model-a", "openai:model-b"),
    *,
    judge: str = JUDGE,
    rounds: int = 2,
    topic: str = "Should a small team adopt a monorepo for its services?",
) -> DebateSpec:
    roles = ("proposer", "challenger") if fmt == "challenge" else ("debater",) * len(models)
    seats = tuple(Seat(label=LABELS[i], role=roles[i], model=m) for i, m in enumerate(models))  # type: ignore[arg-type]
    return DebateSpec(topic=topic, format=fmt, rounds=rounds, seats=seats, judge=judge)  # type: ignore[arg-type]


async def run_debate(
    srv: FakeLLMServer, spec: DebateSpec, *, call_timeout: float = 10.0, db: Path | None = None,
    env: dict[str, str] | None = None,
) -> Result:
    settings = settings_for(srv, timeout=call_timeout, env=env)
    registry = ProviderRegistry(settings)
    sink = CollectingSink()
    store = Store(db) if db is not None else None
    try:
        if store is not None:
            await store.start()
        bus = EventBus([sink], log=StoreSink(store) if store is not None else None)
        outcome = await Engine(registry, settings).run(spec, bus)
    finally:
        if store is not None:
            await store.close()
        await registry.aclose()
    return Result(outcome, sink.events)


def is_model(name: str) -> Callable[[RequestRecord], bool]:
    return lambda r: r.model == name


def model_and(name: str, text: str) -> Callable[[RequestRecord], bool]:
    """Requests to `name` whose whole prompt (system and messages) contains `text`."""
    return lambda r: r.model == name and text in r.prompt_text


def overlapping(records: list[RequestRecord]) -> bool:
    """True when every request started before any of them finished: they were in flight together."""
    finished = [r.finished_at for r in records]
    assert all(f is not None for f in finished)
    return max(r.started_at for r in records) < min(f for f in finished if f is not None)


def quoted(text: str) -> str:
    """`text` as a prompt quotes a turn's lines (orchestrator/debate/quoting.py): each one after "| "."""
    return "\n".join("| " + line for line in text.strip().splitlines())
