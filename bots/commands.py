"""One grammar for `/debate …`, shared by Slack, Discord and anything else that takes text commands.

    /debate <topic> [--format F] [--rounds N] [--vs MODEL,MODEL] [--judge MODEL] [--effort E]
    /debate help | models | history [N] | search <query> | show <id> | stop <id> | quote <id>

Options may appear anywhere; every word that is not an option is the topic, so apostrophes and
quotes in a topic need no escaping. Slack turns `--` into an em dash on some clients; both work.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from orchestrator.config import Settings
from orchestrator.debate.seating import NoProviderConfigured, choose_seats
from orchestrator.models import EFFORTS, FORMATS, MAX_ROUNDS, MAX_TOPIC_CHARS, DebateSpec, Effort, Format
from orchestrator.providers.registry import (
    ModelStringError,
    ProviderNotConfiguredError,
    ProviderRegistry,
    UnknownProviderError,
)

SUBCOMMANDS = ("help", "models", "history", "search", "show", "stop", "quote")
OPTIONS = ("format", "rounds", "vs", "judge", "effort", "proposer", "challenger")

HELP_TEXT = (
    "*Start a debate*\n"
    "`/debate <topic>` runs a challenge debate (proposer vs challenger, 2 rounds) and a judge's verdict.\n"
    "Options: `--format challenge|consensus|stances`  `--rounds 1-5`  `--vs MODEL,MODEL`  "
    "`--judge MODEL`  `--effort low|medium|high|max`\n"
    "MODEL is provider:model, e.g. `anthropic:claude-sonnet-4-6`, `openai:gpt-5`, `ollama:qwen3`.\n"
    "*Recall*\n"
    "`/debate search <words>` · `/debate history` · `/debate show <id>` · "
    "`/debate quote <id>` · `/debate stop <id>` · `/debate models`"
)


class CommandError(ValueError):
    """Bad input; the message is shown to the user as is."""


class _Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StartDebate(_Command):
    kind: Literal["start"] = "start"
    topic: str
    format: Format | None = None
    rounds: int | None = None
    debaters: tuple[str, ...] | None = None
    proposer: str | None = None
    challenger: str | None = None
    judge: str | None = None
    effort: Effort | None = None


class Help(_Command):
    kind: Literal["help"] = "help"


class Models(_Command):
    kind: Literal["models"] = "models"


class History(_Command):
    kind: Literal["history"] = "history"
    limit: int = 10


class Search(_Command):
    kind: Literal["search"] = "search"
    query: str


class Show(_Command):
    kind: Literal["show"] = "show"
    debate_id: str


class Stop(_Command):
    kind: Literal["stop"] = "stop"
    debate_id: str


class Quote(_Command):
    kind: Literal["quote"] = "quote"
    debate_id: str


Command = StartDebate | Help | Models | History | Search | Show | Stop | Quote

_OPTION_RE = re.compile(r"^(?:--|—|–)([a-z-]+)(?:=(.*))?$", re.IGNORECASE)
_ID_RE = re.compile(r"^[0-9a-f]{4,32}$")


def _debate_id(words: list[str], name: str) -> str:
    if len(words) != 1 or not _ID_RE.match(words[0].lower()):
        raise CommandError(f"`/debate {name}` takes one debate id, e.g. `/debate {name} 3f2a9c01d4`.")
    return words[0].lower()


def _split_options(words: list[str]) -> tuple[list[str], dict[str, str]]:
    rest: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        match = _OPTION_RE.match(words[i])
        if not match:
            rest.append(words[i])
            i += 1
            continue
        name, value = match.group(1).lower(), match.group(2)
        if name not in OPTIONS:
            valid = ", ".join(f"--{o}" for o in OPTIONS)
            raise CommandError(f"Unknown option `--{name}`. Valid options: {valid}.")
        if value is None:
            if i + 1 >= len(words):
                raise CommandError(f"`--{name}` needs a value.")
            value = words[i + 1]
            i += 1
        options[name] = value
        i += 1
    return rest, options


def _models(value: str) -> tuple[str, ...]:
    models = tuple(m.strip() for m in value.split(",") if m.strip())
    if not 2 <= len(models) <= 4:
        raise CommandError(
            "`--vs` takes 2 to 4 models separated by commas, e.g. `--vs openai:gpt-5,anthropic:claude-sonnet-4-6`."
        )
    return models


def _start(words: list[str], options: dict[str, str]) -> StartDebate:
    topic = " ".join(words).strip()
    if not topic:
        raise CommandError("Give a topic, e.g. `/debate Should we adopt Rust for ingest?` (`/debate help` for more).")
    if len(topic) > MAX_TOPIC_CHARS:
        raise CommandError(
            f"The topic is {len(topic):,} characters; the limit is {MAX_TOPIC_CHARS:,}. Shorten it and try again."
        )
    fmt = options.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise CommandError(f"Unknown format `{fmt}`. Choose one of: {', '.join(FORMATS)}.")
    effort = options.get("effort")
    if effort is not None and effort not in EFFORTS:
        raise CommandError(f"Unknown effort `{effort}`. Choose one of: {', '.join(EFFORTS)}.")
    rounds: int | None = None
    if "rounds" in options:
        if not options["rounds"].isdigit() or not 1 <= int(options["rounds"]) <= MAX_ROUNDS:
            raise CommandError(f"`--rounds` must be a whole number from 1 to {MAX_ROUNDS}.")
        rounds = int(options["rounds"])
    return StartDebate(
        topic=topic,
        format=fmt,  # type: ignore[arg-type]
        rounds=rounds,
        debaters=_models(options["vs"]) if "vs" in options else None,
        proposer=options.get("proposer"),
        challenger=options.get("challenger"),
        judge=options.get("judge"),
        effort=effort,  # type: ignore[arg-type]
    )


def parse_command(text: str) -> Command:
    """Turn the text after `/debate` into a Command, or raise CommandError with a user-facing message."""
    words = text.split()
    if not words:
        return Help()
    head = words[0].lower()
    if head in SUBCOMMANDS and (head != "history" or len(words) <= 2):
        rest = words[1:]
        if head == "help":
            return Help()
        if head == "models":
            return Models()
        if head == "history":
            if rest and not rest[0].isdigit():
                raise CommandError("`/debate history` takes an optional count, e.g. `/debate history 20`.")
            return History(limit=min(int(rest[0]), 50) if rest else 10)
        if head == "search":
            if not rest:
                raise CommandError("`/debate search` needs words to look for, e.g. `/debate search kafka`.")
            return Search(query=" ".join(rest))
        if head in ("show", "stop", "quote"):
            cls = {"show": Show, "stop": Stop, "quote": Quote}[head]
            return cls(debate_id=_debate_id(rest, head))
    rest, options = _split_options(words)
    return _start(rest, options)


def _default_rounds(fmt: Format, settings: Settings) -> int:
    """Consensus runs until agreement (at most 4 rounds); stances runs openings and 2 rebuttals."""
    return {"consensus": 4, "stances": 3}.get(fmt, settings.debate_rounds)


def build_spec(
    command: StartDebate,
    settings: Settings,
    registry: ProviderRegistry,
    *,
    platform: str,
    channel: str | None = None,
    thread: str | None = None,
    requested_by: str | None = None,
) -> tuple[DebateSpec, list[str]]:
    """Resolve seats and defaults into a DebateSpec; returns it with notes to show the user."""
    fmt: Format = command.format or settings.debate_format  # type: ignore[assignment]
    try:
        seating = choose_seats(
            settings,
            registry,
            format=fmt,
            debaters=list(command.debaters) if command.debaters else None,
            proposer=command.proposer,
            challenger=command.challenger,
            judge=command.judge,
        )
        spec = DebateSpec(
            topic=command.topic,
            format=fmt,
            rounds=command.rounds or _default_rounds(fmt, settings),
            seats=seating.seats,
            judge=seating.judge,
            effort=command.effort or settings.debate_effort,  # type: ignore[arg-type]
            platform=platform,
            channel=channel,
            thread=thread,
            requested_by=requested_by,
        )
        for model in dict.fromkeys([*(seat.model for seat in spec.seats), spec.judge]):
            registry.resolve(model)  # fail now, not in round 1, when a credential or tool is missing
    except (ModelStringError, UnknownProviderError, ProviderNotConfiguredError, NoProviderConfigured) as exc:
        raise CommandError(str(exc)) from None
    except ValidationError as exc:
        raise CommandError(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from None
    return spec, seating.notes
