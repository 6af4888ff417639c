"""Run as a fresh process (a worker's shape): label the model metrics as `debate worker` does, run N
debates through the real engine and SDKs against the LLM peer at the given base URL, each with model
names typed for it alone (a debater and a judge), then print the scrape's size as one JSON line.

    python -m tests.metrics_cardinality_run OPENAI_BASE_URL N
"""

from __future__ import annotations

import asyncio
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

from orchestrator.config import Settings
from orchestrator.debate.engine import Engine
from orchestrator.events import EventBus
from orchestrator.metrics import exposition, label_models
from orchestrator.models import DebateSpec, Seat
from orchestrator.providers import ProviderRegistry
from orchestrator.providers.registry import operator_models


def typed_spec(n: int) -> DebateSpec:
    return DebateSpec(topic=f"Question {n}?", rounds=1, judge=f"openai:judge-typed-{n:03d}-{'j' * 60}", seats=(
        Seat(label="A", role="proposer", model="openai:gpt-5-mini"),
        Seat(label="B", role="challenger", model=f"openai:typed-by-a-user-{n:03d}-{'x' * 60}")))


async def main(base_url: str, count: int) -> None:
    settings = Settings(_env_file=None, OPENAI_API_KEY="sk-test-secret-0123456789",  # type: ignore[call-arg]
                        OPENAI_BASE_URL=base_url, DEBATE_MAX_RETRIES=0, DEBATE_CHAT_MODELS="openai:*")
    label_models(operator_models(settings))  # as Worker.start does
    registry = ProviderRegistry(settings)
    engine = Engine(registry, settings)
    try:
        for batch in range(0, count, 10):
            await asyncio.gather(*(engine.run(typed_spec(n), EventBus([]))
                                   for n in range(batch, min(batch + 10, count))))
    finally:
        await registry.aclose()
    text = exposition().decode()
    series = [s for family in text_string_to_metric_families(text) for s in family.samples]
    models = sorted({s.labels["gen_ai_request_model"] for s in series if "gen_ai_request_model" in s.labels})
    print(json.dumps({"series": len(series), "bytes": len(text), "models": models}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
