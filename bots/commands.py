"""One grammar and one set of rules for starting a debate, from Slack, Discord and the CLI.

    /debate <topic> [--format F] [--rounds N] [--vs MODEL,MODEL] [--judge MODEL] [--judges M,M,M] [--effort E]
    /debate help | models | history [N] | search <query> | show <id> | stop <id> | quote <id>
    /debate interject <id> <text> | continue <id> [facts] | rematch <id> [--vs A,B] [--format F]
          | config [key=value …]          (their words: bots/grammar.py; their rules: bots/loop.py)

`parse_command` reads that text (Slack): options anywhere, every other word the topic, so quotes need no escaping,
and an em dash works for `--`. Discord's typed options and the CLI's argparse skip the text but not the rules: every
surface calls `start_request` (topic, format, rounds, debaters, effort and models checked against
`orchestrator.models`' limits, with the same messages), then `build_spec`, which seats the debate and holds chat to
the operator's `ChatPolicy`; chat then goes through `chat_spec`, which fills what the user left unset from the
channel's defaults and admits it under the quotas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import ValidationError

from bots.grammar import (
    ID_RE,
    TEAM_HELP,
    TEAM_SUBCOMMANDS,
    CommandError,
    Config,
    Continue,
    Interject,
    Rematch,
    _Command,
    parse_team_command,
    split_options,
)
from orchestrator.app import RESTARTING, Core
from orchestrator.config import Settings
from orchestrator.debate.seating import NoProviderConfigured, choose_seats
from orchestrator.models import (
    EFFORTS,
    FORMATS,
    MAX_COUNCIL,
    MAX_DEBATERS,
    MAX_JUDGES,
    MAX_ROUNDS,
    MAX_TOPIC_CHARS,
    MIN_DEBATERS,
    MIN_JUDGES,
    MIN_ROUNDS,
    ChannelDefaults,
    DebateSpec,
    Effort,
    Format,
    max_seats,
)
from orchestrator.policy import ChatPolicy, NotAllowed
from orchestrator.providers import (
    ModelStringError,
    ProviderNotConfiguredError,
    ProviderRegistry,
    UnknownProviderError,
    parse_model,
)
from orchestrator.quotas import Quota, QuotaExceeded

SUBCOMMANDS = ("help", "models", "history", "search", "show", "stop", "quote", "usage")
# the command line's own words: in chat they are answered with where to find them, never debated
OPERATOR_ONLY = {"link": "debate link ID", "export": "debate export ID --format md|json",
                 "purge": "debate purge …", "audit": "debate audit"}
USAGE_LINES = {
    "usage": "`/debate usage` takes nothing after it: it shows the spend you may see and the budgets.",
    "history": "`/debate history` takes an optional count, e.g. `/debate history 20`.",
    "models": "`/debate models` takes nothing after it.",
}

HELP_TEXT = (
    "*Start a debate*\n"
    "`/debate <topic>` runs a challenge debate (proposer vs challenger, 2 rounds) and a judge's verdict.\n"
    f"Options: `--format {'|'.join(FORMATS)}`  `--rounds {MIN_ROUNDS}-{MAX_ROUNDS}`  `--vs MODEL,MODEL`  "
    f"`--judge MODEL`  `--judges MODEL,MODEL,MODEL` (a jury of {MIN_JUDGES}-{MAX_JUDGES})  "
    f"`--effort {'|'.join(EFFORTS)}`  `--context URL` (a page every debater and the judge read; repeatable)\n"
    "MODEL is provider:model, e.g. `anthropic:claude-sonnet-4-6`, `openai:gpt-5`, `ollama:qwen3`.\n"
    "To debate a message, its files and its thread: the message's *Debate this* action.\n"
    "A topic that starts with a command's word (`usage`, `history`, `continue` …) goes in quotes.\n"
    "*Recall*\n"
    "`/debate search <words>` · `/debate history` · `/debate show <id>` · "
    "`/debate quote <id>` · `/debate stop <id>` · `/debate models` · `/debate usage`\n"
    + TEAM_HELP
)


class StartDebate(_Command):
    kind: Literal["start"] = "start"
    topic: str
    format: Format | None = None
    rounds: int | None = None
    debaters: tuple[str, ...] | None = None
    proposer: str | None = None
    challenger: str | None = None
    judge: str | None = None
    judges: tuple[str, ...] | None = None  # a jury in place of `judge`
    effort: Effort | None = None
    rematch_of: str | None = None  # the debate this one replays (`/debate rematch`)
    context: tuple[str, ...] = ()  # http(s) links read into the brief (`--context URL`, repeatable)


class Help(_Command):
    kind: Literal["help"] = "help"


class Models(_Command):
    kind: Literal["models"] = "models"


class Usage(_Command):
    kind: Literal["usage"] = "usage"


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


Command = (StartDebate | Help | Models | Usage | History | Search | Show | Stop | Quote | Interject | Continue | Rematch
           | Config)


def _small_number(text: str) -> bool:
    """ASCII digits only (`"²".isdigit()` is true, `int("²")` fails), and few enough to be a count."""
    return text.isascii() and text.isdigit() and len(text) <= 6


def _debate_id(words: list[str], name: str) -> str:
    if len(words) != 1 or not ID_RE.match(words[0].lower()):
        raise CommandError(f"`/debate {name}` takes one debate id, e.g. `/debate {name} 3f2a9c01d4`.")
    return words[0].lower()


def _start(words: list[str], options: dict[str, str]) -> StartDebate:
    request = start_request(
        " ".join(words), format=options.get("format"), rounds=options.get("rounds"), debaters=options.get("vs"),
        proposer=options.get("proposer"), challenger=options.get("challenger"), judge=options.get("judge"),
        effort=options.get("effort"), judges=options.get("judges"),
    )
    links = context_links(options.get("context", "").split())
    return request.model_copy(update={"context": links}) if links else request


def context_links(values: Sequence[str]) -> tuple[str, ...]:
    """`--context` values from chat: http(s) links only (Slack may wrap one as `<url>` or `<url|label>`)."""
    links = []
    for value in values:
        link = value.strip().removeprefix("<").removesuffix(">").split("|", 1)[0].strip()
        if not link.lower().startswith(("http://", "https://")):
            raise CommandError(f"`--context` takes an http(s) link here (got `{link[:80]}`); to debate a message, "
                               "its files or its thread, use the message's **Debate this** action.")
        links.append(link)
    return tuple(links)


def named_subcommand(topic: str) -> str | None:
    """The subcommand a text's first word names (`usage`, `link`, `continue` …), or None. A topic that
    starts with such a word is put in quotes to be debated (`/debate "usage based pricing?"`)."""
    head = (topic.split(None, 1) or [""])[0].lower()
    return head if head in SUBCOMMANDS or head in TEAM_SUBCOMMANDS or head in OPERATOR_ONLY else None


def subcommand_refusal(name: str, command_of: dict[str, str] | None = None) -> CommandError:
    """What a surface says to a topic whose first word is the subcommand `name` (`command_of`: the surface's
    own command for it, e.g. Discord's `/debate-usage`)."""
    quoted = " To debate a topic that starts with that word, put the topic in quotes."
    if name in OPERATOR_ONLY:
        return CommandError(f"`{name}` is for the operator's command line (`{OPERATOR_ONLY[name]}`), not chat; "
                            "a debate's page link, where the bot has pages, is on its verdict message." + quoted)
    own = (command_of or {}).get(name)
    return CommandError(f"`{name}` names a command: use `{own or '/debate ' + name}`." + quoted)


def parse_command(text: str) -> Command:
    """Turn the text after `/debate` into a Command, or raise CommandError with a user-facing message.
    A first word that names a subcommand is that subcommand, whatever follows; wrong arguments get its
    usage line, never a debate (a topic that starts with such a word is given in quotes)."""
    words = text.split()
    if not words:
        return Help()
    head = words[0].lower()
    if head in OPERATOR_ONLY:
        raise subcommand_refusal(head)
    if head in SUBCOMMANDS:
        rest = words[1:]
        if head in ("models", "usage") and rest:
            raise CommandError(USAGE_LINES[head])
        if head == "help":
            return Help()
        if head == "models":
            return Models()
        if head == "usage":
            return Usage()
        if head == "history":
            if len(rest) > 1 or (rest and not _small_number(rest[0])):
                raise CommandError(USAGE_LINES["history"])
            return History(limit=min(int(rest[0]), 50) if rest else 10)
        if head == "search":
            if not rest:
                raise CommandError("`/debate search` needs words to look for, e.g. `/debate search kafka`.")
            return Search(query=" ".join(rest))
        if head in ("show", "stop", "quote"):
            cls = {"show": Show, "stop": Stop, "quote": Quote}[head]
            return cls(debate_id=_debate_id(rest, head))
    if head in TEAM_SUBCOMMANDS:
        return parse_team_command(text)
    rest, options = split_options(words)
    return _start(rest, options)


# ---- the rules: one set for Slack, Discord and the CLI, with the limits named in orchestrator/models.py


def _topic(text: str) -> str:
    topic = text.strip()
    if not topic:
        raise CommandError("The topic is empty: give the question to debate, e.g. “Should we adopt Rust for ingest?”")
    if len(topic) > MAX_TOPIC_CHARS:
        raise CommandError(
            f"The topic is {len(topic):,} characters; the limit is {MAX_TOPIC_CHARS:,}. Shorten it and try again."
        )
    return topic


def _choice(name: str, value: str | None, choices: tuple[str, ...]) -> str | None:
    if value is not None and value not in choices:
        raise CommandError(f"Unknown {name} `{value}`. Choose one of: {', '.join(choices)}.")
    return value


def _rounds(value: str | int | None) -> int | None:
    if value is None:
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not _small_number(text) or not MIN_ROUNDS <= int(text) <= MAX_ROUNDS:
        raise CommandError(f"Rounds must be a whole number from {MIN_ROUNDS} to {MAX_ROUNDS}.")
    return int(text)


def _model(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        parse_model(value)
    except (ModelStringError, UnknownProviderError) as exc:
        raise CommandError(str(exc)) from None
    return value.strip()


def _debaters(value: str | Sequence[str] | None, fmt: str | None = None) -> tuple[str, ...] | None:
    if value is None:
        return None
    parts = value.split(",") if isinstance(value, str) else value
    models = tuple(m.strip() for m in parts if m.strip())
    if fmt is not None or not MAX_DEBATERS < len(models) <= MAX_COUNCIL:
        _check_count(models, fmt or "challenge")  # a council's fifth member waits for the default format: build_spec
    return tuple(_model(m) or m for m in models)


def judges_list(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """A jury as given (`a:x,b:y,c:z`), checked: MIN_JUDGES to MAX_JUDGES model strings."""
    if value is None:
        return None
    parts = value.split(",") if isinstance(value, str) else value
    models = tuple(m.strip() for m in parts if m.strip())
    if not MIN_JUDGES <= len(models) <= MAX_JUDGES:
        raise CommandError(f"A jury takes {MIN_JUDGES} to {MAX_JUDGES} judges, separated by commas, "
                           "e.g. `--judges openai:gpt-5-mini,anthropic:claude-haiku-4-5,gemini:gemini-2.5-flash`.")
    return tuple(_model(m) or m for m in models)


def _check_count(models: Sequence[str], fmt: str) -> None:
    most = max_seats(fmt)
    if not MIN_DEBATERS <= len(models) <= most:
        who = "council members" if fmt == "council" else "debaters"
        raise CommandError(f"Name {MIN_DEBATERS} to {most} {who}, separated by commas, "
                           "e.g. `openai:gpt-5,anthropic:claude-sonnet-4-6`.")


def start_request(
    topic: str,
    *,
    format: str | None = None,
    rounds: str | int | None = None,
    debaters: str | Sequence[str] | None = None,
    proposer: str | None = None,
    challenger: str | None = None,
    judge: str | None = None,
    effort: str | None = None,
    judges: str | Sequence[str] | None = None,
) -> StartDebate:
    """Check a request to start a debate, from any surface, and return it as a `StartDebate`.

    The values are as the user gave them (rounds may still be text, debaters a comma-separated string);
    a bad one raises `CommandError` with the same message whichever surface it came from.
    """
    return StartDebate(
        topic=_topic(topic),
        format=_choice("format", format, FORMATS),  # type: ignore[arg-type]
        rounds=_rounds(rounds),
        debaters=_debaters(debaters, format),
        proposer=_model(proposer),
        challenger=_model(challenger),
        judge=_model(judge),
        judges=judges_list(judges),
        effort=_choice("effort", effort, EFFORTS),  # type: ignore[arg-type]
    )


def _default_rounds(fmt: Format, settings: Settings) -> int:
    """Consensus runs until agreement (at most 4 rounds); stances runs openings and 2 rebuttals; a council
    answers, then ranks."""
    return {"consensus": 4, "stances": 3, "council": 2}.get(fmt, settings.debate_rounds)


def build_spec(
    command: StartDebate,
    settings: Settings,
    registry: ProviderRegistry,
    *,
    policy: ChatPolicy | None,
    platform: str,
    channel: str | None = None,
    thread: str | None = None,
    requested_by: str | None = None,
    defaults: ChannelDefaults | None = None,
) -> tuple[DebateSpec, list[str]]:
    """Resolve seats and defaults into a DebateSpec; returns it with notes to show the user.

    `policy` is the chat policy every chat surface must pass; None only for the operator (the CLI).
    `defaults`: the channel's (`/debate config`), for every option the user left unset; its rounds and
    effort count as defaults (lowered to the policy's ceilings), its models are held to the policy like
    any seat. Nothing is started here: a refused request has run nothing and posted nothing.
    """
    channel_defaults = defaults or ChannelDefaults()
    fmt: Format = command.format or channel_defaults.format or settings.debate_format  # type: ignore[assignment]
    default_rounds = channel_defaults.rounds or _default_rounds(fmt, settings)
    default_effort = channel_defaults.effort or settings.debate_effort
    rounds = command.rounds or default_rounds
    effort = command.effort or default_effort
    seated_by_name = not command.debaters  # `--vs` names every debater: the channel's seats do not apply
    if command.debaters:
        _check_count(command.debaters, fmt)
    try:
        if policy is not None:
            rounds = policy.rounds(command.rounds, default_rounds)
            effort = policy.effort(command.effort, default_effort)
        seating = choose_seats(
            settings,
            registry,
            format=fmt,
            debaters=list(command.debaters) if command.debaters else None,
            proposer=command.proposer or (channel_defaults.proposer if seated_by_name else None),
            challenger=command.challenger or (channel_defaults.challenger if seated_by_name else None),
            judge=command.judge or channel_defaults.judge,
            judges=command.judges or channel_defaults.judges or settings.debate_judges or None,
            allow=policy.allows if policy is not None else None,
        )
        spec = DebateSpec(
            topic=command.topic,
            format=fmt,
            rounds=rounds,
            seats=seating.seats,
            judge=seating.judge,
            tiebreak_judge=None if seating.judges else seating.tiebreak_judge,
            judges=seating.judges,
            effort=effort,  # type: ignore[arg-type]
            platform=platform,
            channel=channel,
            thread=thread,
            requested_by=requested_by,
            rematch_of=command.rematch_of,
        )
        seats = [*((seat.role, seat.model) for seat in spec.seats), ("judge", spec.judge)]
        if spec.tiebreak_judge:
            seats.append(("judge", spec.tiebreak_judge))
        seats += [("judge", juror) for juror in spec.judges]
        if policy is not None:  # before anything resolves a model: a refused cli: tool is never looked at
            for role, model in seats:
                policy.check_model(model, role)
        for model in dict.fromkeys(model for _role, model in seats):
            registry.check(model)  # fail now, not in round 1, when a credential or tool is missing
    except NoProviderConfigured as exc:
        if policy is None:
            raise CommandError(str(exc)) from None
        raise CommandError("No model is available for chat debates on this server yet; the operator configures "
                           "a provider and DEBATE_CHAT_MODELS.") from None
    except (ModelStringError, UnknownProviderError, ProviderNotConfiguredError, NotAllowed) as exc:
        raise CommandError(str(exc)) from None
    except ValidationError as exc:
        raise CommandError(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from None
    return spec, seating.notes


async def chat_spec(
    command: StartDebate, core: Core, *, platform: str, channel: str, requested_by: str, channel_private: bool,
    workspace: str | None = None,
) -> tuple[DebateSpec, list[str]]:
    """What every chat surface does before it posts anything: what the user left unset filled from the
    channel's defaults (`/debate config`), the spec held to the chat policy, then admitted under the
    chat quotas (its slot reserved in the log). A refusal is a `CommandError` for the user alone, and
    so is a start while the process is stopping. Once this returns, the surface must start it
    (`core.feed.enqueue`) or give its slot back (`core.abandon`).

    `channel_private` has no default: admission is the debate's first write to the log, and recall reads
    that row from then on, so the surface says whether the channel is private before it (a surface that
    cannot tell says True)."""
    if core.stopping:
        raise CommandError(RESTARTING)
    defaults = await core.channel_defaults(platform, workspace, channel)
    spec, notes = build_spec(command, core.settings, core.registry, policy=ChatPolicy(core.settings, core.registry),
                             platform=platform, channel=channel, requested_by=requested_by, defaults=defaults)
    spec = spec.model_copy(update={"workspace": workspace, "channel_private": channel_private})
    try:
        await core.admit(spec, Quota.from_settings(core.settings))
    except QuotaExceeded as exc:
        raise CommandError(exc.user_text()) from None
    return spec, notes
