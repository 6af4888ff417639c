"""The words of the commands that act on a debate that exists, shared by `bots/commands.py` (which
parses every `/debate …` text) and `bots/loop.py` (which applies them):

    /debate interject <id> <text>              a note for the debaters' next round (while it runs)
    /debate continue <id> [facts]              one more round after the verdict, then a new verdict
    /debate rematch <id> [--vs A,B] [--format F] [--judges A,B,C]   the same topic again, with other debaters or format
    /debate config [key=value …]               this channel's defaults (none: show them)

Also the user-facing error every surface shows as it is (`CommandError`) and how a debate id is read.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from orchestrator.models import EFFORTS, FORMATS, MAX_INTERJECTION_CHARS
from orchestrator.safety import scrub_user_text

ID_RE = re.compile(r"^[0-9a-f]{4,32}$")
OPTION_RE = re.compile(r"^(?:--|—|–)([a-z-]+)(?:=(.*))?$", re.IGNORECASE)  # Slack may turn `--` into a dash
OPTIONS = ("format", "rounds", "vs", "judge", "judges", "effort", "proposer", "challenger", "context")
REPEATABLE = ("context",)  # given more than once: the values kept in order, space-separated
CONFIG_KEYS = ("proposer", "challenger", "judge", "judges", "format", "rounds", "effort", "interjections")
CLEARED = ("", "default")  # `key=` or `key=default`: back to the operator's default
SWITCH = {"on": True, "off": False, "yes": True, "no": False, "true": True, "false": False}
TEAM_SUBCOMMANDS = ("interject", "continue", "rematch", "config")

TEAM_HELP = (
    "*While it runs, and after*\n"
    f"`/debate interject <id> <text>` adds a note (up to {MAX_INTERJECTION_CHARS} characters) for both sides' "
    "next round · `/debate continue <id> [new facts]` runs one more round and a new verdict · "
    "`/debate rematch <id> [--vs MODEL,MODEL] [--format F]` replays the topic\n"
    "*This channel*\n"
    "`/debate config` shows its defaults; admins set them with `/debate config key=value …` "
    f"(keys: {', '.join(CONFIG_KEYS)}; `key=default` clears one; effort: {'|'.join(EFFORTS)}; "
    f"format: {'|'.join(FORMATS)}; interjections: on|off)"
)


class CommandError(ValueError):
    """Bad input; the message is shown to the user as is, less any secret the input it quotes carried."""

    def __init__(self, message: str) -> None:
        super().__init__(scrub_user_text(message))


class _Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Interject(_Command):
    kind: Literal["interject"] = "interject"
    debate_id: str
    text: str


class Continue(_Command):
    kind: Literal["continue"] = "continue"
    debate_id: str
    facts: str | None = None


class Rematch(_Command):
    kind: Literal["rematch"] = "rematch"
    debate_id: str
    vs: str | None = None
    format: str | None = None
    judges: str | None = None


class Config(_Command):
    kind: Literal["config"] = "config"
    assignments: dict[str, str] = {}


def is_debate_id(word: str) -> bool:
    return bool(ID_RE.match(word.lower()))


def debate_id(words: list[str], name: str) -> str:
    if len(words) != 1 or not is_debate_id(words[0]):
        raise CommandError(f"`/debate {name}` takes one debate id, e.g. `/debate {name} 3f2a9c01d4`.")
    return words[0].lower()


def parse_config(words: list[str]) -> dict[str, str]:
    """`key=value` pairs (a later one wins); CommandError for a word that is not one or an unknown key."""
    assignments: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise CommandError(f"Write each setting as key=value, e.g. `/debate config rounds=3`; `{word}` is not.")
        if key not in CONFIG_KEYS:
            raise CommandError(f"Unknown setting `{key}`. Settings: {', '.join(CONFIG_KEYS)}.")
        assignments[key] = value.strip()
    return assignments


def parse_switch(value: str) -> bool:
    """on/off (yes/no, true/false) for `interjections=`."""
    try:
        return SWITCH[value.strip().lower()]
    except KeyError:
        raise CommandError(f"`interjections` is on or off, not `{value}`.") from None


def split_options(words: list[str], allowed: tuple[str, ...] = OPTIONS) -> tuple[list[str], dict[str, str]]:
    """The words that are not `--name value` (or `--name=value`) options, and the options."""
    rest: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        match = OPTION_RE.match(words[i])
        if not match:
            rest.append(words[i])
            i += 1
            continue
        name, value = match.group(1).lower(), match.group(2)
        if name not in allowed:
            valid = ", ".join(f"--{o}" for o in allowed)
            raise CommandError(f"Unknown option `--{name}`. Valid options: {valid}.")
        if value is None:
            if i + 1 >= len(words):
                raise CommandError(f"`--{name}` needs a value.")
            value = words[i + 1]
            i += 1
        options[name] = f"{options[name]} {value}" if name in REPEATABLE and name in options else value
        i += 1
    return rest, options


def parse_team_command(text: str) -> Interject | Continue | Rematch | Config:
    """One of these commands from the text after `/debate` (its first word names it). A note or new
    facts keep their words as typed, `--` included."""
    head, after = [*text.split(None, 1), "", ""][:2]
    head = head.lower()
    words = after.split()
    if head == "config":
        return Config(assignments=parse_config(words))
    if head == "rematch":
        rest, options = split_options(words, ("vs", "format", "judges"))
        return Rematch(debate_id=debate_id(rest, head), vs=options.get("vs"), format=options.get("format"),
                       judges=options.get("judges"))
    if not words or not is_debate_id(words[0]):
        example = "Our p99 budget is 50 ms." if head == "interject" else "[new facts]"
        raise CommandError(f"`/debate {head}` takes a debate id first, e.g. `/debate {head} 3f2a9c01d4 {example}`.")
    note = [*after.split(None, 1), ""][1].strip()
    if head == "interject":
        if not note:
            raise CommandError("Add your note after the id, e.g. `/debate interject 3f2a9c01d4 Our p99 budget is "
                               "50 ms.`")
        return Interject(debate_id=words[0].lower(), text=note)
    return Continue(debate_id=words[0].lower(), facts=note or None)
