"""Who sits where: pick debaters from different model families and a judge, from settings and flags."""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.config import Settings
from orchestrator.models import Format, Seat
from orchestrator.providers.registry import ProviderRegistry, family, parse_model

SETUP_HINT = (
    "No model provider is configured. Set one of these (in the environment or .env), then run again:\n"
    "  ANTHROPIC_API_KEY=...    Claude   (anthropic:claude-sonnet-4-6)\n"
    "  OPENAI_API_KEY=...       GPT      (openai:gpt-5)\n"
    "  GEMINI_API_KEY=...       Gemini   (gemini:gemini-2.5-pro)\n"
    "  OPENROUTER_API_KEY=...   any model on OpenRouter\n"
    "  OLLAMA_BASE_URL=http://localhost:11434   local models (ollama:qwen3)\n"
    "Two providers give a debate between two model families."
)

LABELS = ("A", "B", "C", "D")


class NoProviderConfigured(Exception):
    def __str__(self) -> str:
        return SETUP_HINT


@dataclass
class Seating:
    seats: tuple[Seat, ...]
    judge: str
    notes: list[str] = field(default_factory=list)


def _default_models(settings: Settings, registry: ProviderRegistry) -> list[str]:
    """One default model per configured provider, the settings' explicit seats first."""
    models: list[str] = []
    for explicit in (settings.debate_proposer, settings.debate_challenger):
        if explicit and explicit not in models:
            models.append(explicit)
    for provider in registry.configured():
        model = f"{provider}:{registry.default_model(provider)}"
        if model not in models:
            models.append(model)
    models.extend(m for m in registry.configured_cli_tools() if m not in models)
    return models


def _pick_distinct_families(candidates: list[str], count: int) -> list[str]:
    chosen: list[str] = []
    seen: set[str] = set()
    for model in candidates:
        fam = family(model)
        if fam not in seen:
            chosen.append(model)
            seen.add(fam)
        if len(chosen) == count:
            return chosen
    for model in candidates:  # not enough families: reuse models, in order
        if len(chosen) == count:
            break
        chosen.append(model)
    while len(chosen) < count:
        chosen.append(chosen[len(chosen) % max(1, len(candidates))])
    return chosen


def choose_seats(
    settings: Settings,
    registry: ProviderRegistry,
    *,
    format: Format,
    debaters: list[str] | None = None,
    proposer: str | None = None,
    challenger: str | None = None,
    judge: str | None = None,
    count: int | None = None,
) -> Seating:
    """Explicit flags win, then DEBATE_* settings, then one default model per configured provider."""
    for model in (*(debaters or []), proposer, challenger, judge):
        if model:
            parse_model(model)
    notes: list[str] = []
    wanted = count or (len(debaters) if debaters else (3 if format == "stances" else 2))
    if debaters:
        models = list(debaters)
    else:
        first = proposer or settings.debate_proposer
        second = challenger or settings.debate_challenger
        defaults = _default_models(settings, registry)
        if not defaults and not (first and second):
            raise NoProviderConfigured()
        pool = [m for m in (first, second) if m] + [m for m in defaults if m not in (first, second)]
        models = _pick_distinct_families(pool, wanted)
        if first:
            models[0] = first
        if second and wanted > 1:
            models[1] = second
    if len(models) > 1 and len(set(models)) == 1:
        notes.append(
            f"Only one model is available, so every seat uses {models[0]}. "
            "Configure a second provider for a cross-family debate."
        )
    elif len(models) > 1 and len({family(m) for m in models}) == 1:
        notes.append(f"Every seat is from one model family ({family(models[0])}); a second provider would "
                     "make this a cross-family debate.")
    roles = ("proposer", "challenger") if format == "challenge" else ("debater",) * len(models)
    seats = tuple(
        Seat(label=LABELS[i], role=roles[i] if i < len(roles) else "debater", model=model)
        for i, model in enumerate(models[:4])
    )
    judge_model = judge or settings.debate_judge or _judge_default(models, settings, registry)
    return Seating(seats=seats, judge=judge_model, notes=notes)


def _judge_default(models: list[str], settings: Settings, registry: ProviderRegistry) -> str:
    """Prefer a judge from a family that is not debating; else the first debater's model."""
    debating = {family(m) for m in models}
    for candidate in _default_models(settings, registry):
        if family(candidate) not in debating:
            return candidate
    return models[0]
