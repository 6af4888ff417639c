"""Council: tokens, calls and cost of a council of 3 against a 2-round challenge, on one scripted peer.

Both run through the real engine and SDKs against the loopback LLM peer, which sizes every reply the same
way for both: a debater's turn and a member's answer ~450 words (the prompts ask for under about 500), a
judge pass ~300 words, the chair's synthesis ~450 words, a ballot ~40 words a placing (a JSON ranking the
council parser reads in one call). Token counts are the peer's usage (ceil(characters / 4)); the cost is
the engine's, from the vendors' list prices. Seats: the challenge is gpt-5 vs claude-sonnet-4-6 judged by
gpt-5 (two order-swapped passes); the council is gpt-5, claude-sonnet-4-6 and gpt-5-mini, chaired by gpt-5,
and again with gpt-5 as its third member (the same prices as the challenge's seats, one seat more).
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections import Counter
from pathlib import Path

from bench.common import Table, bench_settings
from bench.llm_peer import ReplyPlan, install_replies, words
from orchestrator.debate.engine import Engine
from orchestrator.events import EventBus
from orchestrator.log import Store, StoreSink
from orchestrator.models import DebateSpec, Outcome, Seat
from orchestrator.providers import ProviderRegistry
from tests.fakes.llm_server import FakeLLMServer, RequestRecord

NAME = "council"
TOPIC = "Should the ingest service move from Python to Rust this quarter?"
CHALLENGE = (Seat(label="A", role="proposer", model="openai:gpt-5"),
             Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-6"))
COUNCIL = (Seat(label="A", role="debater", model="openai:gpt-5"),
           Seat(label="B", role="debater", model="anthropic:claude-sonnet-4-6"),
           Seat(label="C", role="debater", model="openai:gpt-5-mini"))
JUDGE = "openai:gpt-5"
PLAN = ReplyPlan(latency_s=0.0, tokens_per_s=0.0, debater_words=450, judge_words=300)
_BALLOT = re.compile(r'<answer letter="([A-E])">')


def council_kind(record: RequestRecord) -> str | None:
    """Which council call `record` is (answer, ranking, synthesis), or None for a challenge's."""
    system = record.messages[0]["content"] if record.messages else ""
    if "one member of a council" in system:
        return "answer"
    if "reviewing the answers other members gave" in system:
        return "ranking"
    if "You chair an advisory council" in system:
        return "synthesis"
    return None


def reply_for(record: RequestRecord) -> str:
    kind = council_kind(record)
    if kind == "ranking":
        letters = _BALLOT.findall(record.last_user)
        ranked = [{"answer": letter, "reason": words(40, i)} for i, letter in enumerate(letters)]
        return "```json\n" + json.dumps({"ranking": ranked}) + "\n```"
    if kind in ("answer", "synthesis"):
        return words(PLAN.debater_words, len(record.last_user) % 97)
    return PLAN.text_for(record)


async def _one(srv: FakeLLMServer, engine: Engine, store: Store, spec: DebateSpec) -> tuple[Outcome, Counter[str]]:
    srv.requests.clear()
    outcome = await engine.run(spec, EventBus(log=StoreSink(store)))
    if outcome.status != "completed":
        raise RuntimeError(f"council bench: the {spec.format} debate ended {outcome.status}: {outcome.error}")
    return outcome, Counter(council_kind(r) or PLAN.kind(r) for r in srv.requests)


def _row(table: Table, name: str, outcome: Outcome, calls: Counter[str]) -> None:
    cost = f"${outcome.cost_usd:.4f}" if outcome.cost_usd is not None else "unknown"
    table.add(f"{name}: calls ({', '.join(f'{k} {v}' for k, v in sorted(calls.items()))})",
              str(sum(calls.values())))
    table.add(f"{name}: input / output tokens", f"{outcome.input_tokens:,} / {outcome.output_tokens:,}")
    table.add(f"{name}: cost at list prices", cost)


async def run(smoke: bool) -> Table:
    del smoke  # two debates against a local peer take a second: smoke runs the same
    with tempfile.TemporaryDirectory(prefix="bench-council-") as tmp:
        async with FakeLLMServer() as srv:
            install_replies(srv, PLAN)
            srv.default_text = reply_for
            settings = bench_settings(Path(tmp) / "council.db", srv.openai_base_url, srv.anthropic_base_url)
            registry = ProviderRegistry(settings)
            engine = Engine(registry, settings)
            try:
                async with Store(settings.debate_db) as store:
                    challenge = await _one(srv, engine, store, DebateSpec(
                        topic=TOPIC, format="challenge", rounds=2, seats=CHALLENGE, judge=JUDGE))
                    council = await _one(srv, engine, store, DebateSpec(
                        topic=TOPIC, format="council", seats=COUNCIL, judge=JUDGE))
                    dearer = await _one(srv, engine, store, DebateSpec(
                        topic=TOPIC, format="council", seats=(*COUNCIL[:2], COUNCIL[0].model_copy(
                            update={"label": "C"})), judge=JUDGE))
            finally:
                await registry.aclose()
    table = Table("council — a council of 3 vs a 2-round challenge, same scripted peer (replies ~450 words, "
                  "judge passes ~300)")
    _row(table, "challenge, 2 rounds", *challenge)
    _row(table, "council of 3", *council)
    _row(table, "council of 3, gpt-5 as the third member", *dearer)
    (c_out, _), (k_out, _) = challenge, council
    table.add("council / challenge: input tokens",
              f"{k_out.input_tokens / c_out.input_tokens:.2f}")
    table.add("council / challenge: output tokens", f"{k_out.output_tokens / c_out.output_tokens:.2f}")
    for name, (outcome, _calls) in (("council", council), ("council with gpt-5 third", dearer)):
        if c_out.cost_usd and outcome.cost_usd is not None:
            table.add(f"{name} / challenge: cost", f"{outcome.cost_usd / c_out.cost_usd:.2f}")
    table.note("a ballot holds the other members' answers but never the ranker's own; the synthesis holds every "
               "answer, the table and the reasons, which is where the council's input tokens go")
    return table


if __name__ == "__main__":
    print(asyncio.run(run(False)).render())
