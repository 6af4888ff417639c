"""Jury: tokens, cost and steadiness of a 3-juror panel vs today's judge (two order-swapped passes plus
a third family's tie-break on a split), on the same scripted transcripts; and the judge retry rate.

Twenty-four scripted challenge debates (1 round, debaters ~200 words a turn): twelve clear (every judge picks
the side the transcript favours) and six close, where each judge model, on each case, is position-biased
with its own rate (20–35 %, the reversal rate measured for single LLM judges on close calls): it
picks whichever debater it is shown first. Which (model, case) pairs are biased is fixed by a hash, so
every run and every configuration sees the same judges. Compared:

- today: one judge (gemini-2.5-pro), two passes swapped, a tie-break (claude-sonnet-4-5) on a split;
- jury, swapped: three small judges of three families, each asked twice with the order swapped
  (a juror whose passes disagree casts no vote) — the default (`JURY_ORDER`);
- jury, alternating: the same three, each asked once, the order alternating across the panel.

"Steady" is a verdict that names the side the transcript favours whichever order its judges saw the
debaters in, i.e. position bias did not decide it. Tokens are the peer's usage (ceil(chars / 4)); cost
is the providers' list prices (orchestrator/providers/vendors) for the judge calls only.

The retry rate: every judge pass of every configuration, plus twelve shapes of one verdict (those real
models give: tests/test_verdict_shapes.py) sent to a schema-less backend (Ollama) and to the three
schema modes (OpenAI/Gemini json_schema strict, Anthropic forced tool): passes that needed a second call.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import Table, bench_settings
from bench.llm_peer import ReplyPlan, install_replies, is_judge, verdict_text
from orchestrator.debate import jury as jury_module
from orchestrator.debate.engine import Engine
from orchestrator.events import EventBus
from orchestrator.models import DebateSpec, Seat, Verdict
from orchestrator.providers import ProviderRegistry, estimate_cost
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord, count_tokens

NAME = "jury"
CASES = 24
SMOKE_CASES = 4  # two clear, two close, the stronger side twice each: every branch of the scoring
JUDGE, TIEBREAK = "gemini:gemini-2.5-pro", "anthropic:claude-sonnet-4-5"
JURORS = ("openai:gpt-5-mini", "anthropic:claude-haiku-4-5", "gemini:gemini-2.5-flash")
BIAS = {"gemini-2.5-pro": 0.2, "claude-sonnet-4-5": 0.2, "gpt-5-mini": 0.35, "claude-haiku-4-5": 0.3,
        "gemini-2.5-flash": 0.3}
SEATS = (Seat(label="A", role="proposer", model="ollama:qwen3"), Seat(label="B", role="challenger",
                                                                       model="ollama:llama3.3"))


def _biased(model: str, case: int) -> bool:
    digest = hashlib.sha256(f"{model}/{case}".encode()).digest()
    return case % 2 == 1 and int.from_bytes(digest[:4]) / 2**32 < BIAS.get(model, 0.0)  # odd cases are close


def _stronger(case: int) -> str:
    return "proposer" if case % 4 < 2 else "challenger"


def _case(record: RequestRecord) -> int:
    return int(record.prompt_text.split("Jury case #", 1)[1][:3])


def _answer(record: RequestRecord, words: int) -> str:
    """The scripted judge: the stronger side, unless this model is biased on this case (then the first shown)."""
    case = _case(record)
    first = "proposer" if "- Debater A: proposer" in record.prompt_text else "challenger"
    side = first if _biased(record.model, case) else _stronger(case)
    letter = "A" if side == first else "B"
    return verdict_text(words).replace('"winner": "A"', f'"winner": "{letter}"')


@dataclass
class Run:
    name: str
    calls: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    steady: int = 0
    jurors: int = 0  # juror answers counted (jury runs)
    confident_wrong: int = 0


@dataclass
class _Keep:
    """A sink that keeps the verdicts."""

    verdicts: list[Verdict] = field(default_factory=list)

    async def handle(self, event: object) -> None:
        verdict = getattr(event, "verdict", None)
        if isinstance(verdict, Verdict):
            self.verdicts.append(verdict)


def _spec(case: int, judges: tuple[str, ...]) -> DebateSpec:
    return DebateSpec(topic=f"Jury case #{case:03d}: should the ingest service move to Rust this quarter?",
                      format="challenge", rounds=1, seats=SEATS, judge=JUDGE,
                      tiebreak_judge=None if judges else TIEBREAK, judges=judges)


async def _configuration(srv: FakeLLMServer, engine: Engine, run: Run, judges: tuple[str, ...], cases: int) -> None:
    for case in range(cases):
        srv.requests.clear()
        keep = _Keep()
        outcome = await engine.run(_spec(case, judges), EventBus([keep]))
        found = keep.verdicts
        if outcome.status != "completed" or not found:
            raise RuntimeError(f"jury bench: case {case} ended {outcome.status}: {outcome.error}")
        winner_role = next(s.role for s in SEATS if s.label == found[0].winner)
        run.steady += winner_role == _stronger(case)
        run.confident_wrong += winner_role != _stronger(case) and found[0].confidence in ("high", "medium")
        run.jurors += len(found[0].jury)
        for record in (r for r in srv.requests if is_judge(r)):
            reply = _answer(record, 300)
            tokens_in, tokens_out = count_tokens(record.prompt_text), count_tokens(reply)
            run.calls += 1
            run.retries += len(record.messages) > 2
            run.input_tokens += tokens_in
            run.output_tokens += tokens_out
            run.cost_usd += estimate_cost(f"{_provider(record)}:{record.model}", tokens_in, tokens_out) or 0.0


async def _shapes_retry_rate(srv: FakeLLMServer, engine: Engine) -> tuple[int, int, int, int]:
    """Passes needing a second call and passes: twelve answer shapes sent to a schema-less backend
    (Ollama), then the three schema modes with the two shapes a constrained model would still *mean*
    in its own order (winner first, evidence as one string)."""
    from tests.test_verdict_shapes import SHAPES

    counts = [0, 0, 0, 0]
    free = [(shape, "ollama:judge-free") for shape in SHAPES.values()]
    schema = [(SHAPES[name], judge) for name in ("winner before evidence", "evidence as one string")
              for judge in ("openai:judge-strict", "gemini:judge-strict", "anthropic:judge-tool")]
    for n, (shape, judge) in enumerate([*free, *schema]):
        srv.requests.clear()
        srv.rules.clear()
        srv.add_rule(Reply(text=lambda body, s=shape: s("A")), is_judge)
        spec = DebateSpec(topic=f"Shape #{n:03d}", format="challenge", rounds=1, seats=SEATS, judge=judge)
        await engine.run(spec, EventBus([]))
        at = 0 if judge.startswith("ollama") else 2
        counts[at] += sum(1 for r in srv.requests if is_judge(r) and len(r.messages) > 2)
        counts[at + 1] += 2
    srv.rules.clear()
    return counts[0], counts[1], counts[2], counts[3]


async def run(smoke: bool) -> Table:
    plan = ReplyPlan(latency_s=0.0, tokens_per_s=0.0, debater_words=200, judge_words=300, summary_words=400)
    cases = SMOKE_CASES if smoke else CASES
    runs = [Run("today: 1 judge, swapped pair + tie-break"), Run("jury of 3, swapped pair each"),
            Run("jury of 3, order alternating")]
    with tempfile.TemporaryDirectory(prefix="bench-jury-") as tmp:
        async with FakeLLMServer() as srv:
            install_replies(srv, plan)
            srv.default_text = lambda r: _answer(r, plan.judge_words) if _scripted(r) else plan.text_for(r)
            settings = bench_settings(Path(tmp) / "jury.db", srv.openai_base_url, srv.anthropic_base_url,
                                      GEMINI_API_KEY="gm-bench", GEMINI_BASE_URL=srv.openai_base_url,
                                      OLLAMA_BASE_URL=srv.openai_base_url)
            registry = ProviderRegistry(settings)
            engine = Engine(registry, settings)
            await _configuration(srv, engine, runs[0], (), cases)
            await _configuration(srv, engine, runs[1], JURORS, cases)
            jury_module.JURY_ORDER = "alternating"
            try:
                await _configuration(srv, engine, runs[2], JURORS, cases)
            finally:
                jury_module.JURY_ORDER = "swapped"
            free_retried, free_passes, schema_retried, schema_passes = await _shapes_retry_rate(srv, engine)
            await registry.aclose()
    table = Table(f"jury — judge calls over {cases} scripted debates ({cases // 2} clear, {cases // 2} close; judges "
                  "position-biased 20–35 % on close cases)")
    base = runs[0]
    for r in runs:
        table.add(f"{r.name}: calls / tokens in / out", f"{r.calls} / {r.input_tokens:,} / {r.output_tokens:,}")
        table.add(f"  cost ≈ ${r.cost_usd:.4f} ({r.cost_usd / base.cost_usd:.2f}× today) · steady verdicts",
                  f"{r.steady}/{cases}")
    table.add("retry rate, every judge pass above", f"{sum(r.retries for r in runs)}/{sum(r.calls for r in runs)}")
    table.check(f"retry rate, 12 answer shapes, Ollama free-form ({free_retried}/{free_passes} passes)",
                free_retried / free_passes, ".2f", 0.0)
    table.check(f"retry rate, schema modes: OpenAI, Gemini json_schema, Anthropic tool ({schema_retried}/"
                f"{schema_passes})", schema_retried / schema_passes, ".2f", 0.0)
    table.add("  confidently wrong (wrong winner at high or medium confidence): today / swapped / alternating",
              " / ".join(str(r.confident_wrong) for r in runs))
    return table


def _scripted(record: RequestRecord) -> bool:
    return is_judge(record) and "Jury case #" in record.prompt_text


def _provider(record: RequestRecord) -> str:
    """The provider a request was for (the peer serves four behind two APIs), for its price."""
    if record.api == "anthropic":
        return "anthropic"
    return "gemini" if record.model.startswith("gemini") else "openai"


if __name__ == "__main__":
    print(asyncio.run(run(False)).render())
