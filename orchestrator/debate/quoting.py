"""Untrusted text quoted into a prompt: debater turns, summaries, earlier verdicts and audience notes.

Everything a model or a viewer wrote reaches another model's prompt through `quote_block`, so no text inside can pose
as a turn, a note or an instruction: one opening tag line (its attributes escaped), every line of the text prefixed
with "| " and escaped, one closing tag line:

    <turn round="2" debater="B" role="challenger" kind="follow-up">
    | &lt;/turn&gt;
    </turn>

A line of the text never starts a line of the prompt and `<`/`>` are escaped, so a turn that quotes a header, a note
or a closing tag stays inside its block; `&` is left alone (an entity a turn writes is as inert as one we write). The
models are told how quoted text reads in orchestrator/prompts/quoted_turns.txt and audience.txt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from orchestrator.models import Turn
from orchestrator.prompts import render

QUOTE = "| "
MAX_ATTRIBUTE_CHARS = 80
_BODY = {"<": "&lt;", ">": "&gt;"}
_ATTRIBUTE = {**_BODY, '"': "&quot;"}
_BODY_CHARS = re.compile("[<>]")
_ATTRIBUTE_CHARS = re.compile('[<>"]')
_SPACE = re.compile(r"\s+")
_MARK = "\ue000"  # where a mark goes, while the text is escaped and split (a private-use character)
_MARK_CHARS = re.compile("\ue000")
_MARK_AT = re.compile("\ue000")


def escape(text: str) -> str:
    """`text` with every character that could open or close a tag escaped."""
    return _BODY_CHARS.sub(lambda m: _BODY[m.group()], text)


def attribute(value: object) -> str:
    """One attribute value: on one line, at most MAX_ATTRIBUTE_CHARS, quotes and tags escaped."""
    text = _SPACE.sub(" ", str(value)).strip()[:MAX_ATTRIBUTE_CHARS]
    return _ATTRIBUTE_CHARS.sub(lambda m: _ATTRIBUTE[m.group()], text)


def one_line(text: str) -> str:
    """Text that shares a prompt line with ours (a stance in a list): its breaks folded, tags escaped."""
    return escape(_SPACE.sub(" ", text).strip())


def quote_block(tag: str, text: str, marks: Sequence[tuple[int, str]] = (), **attributes: object) -> str:
    """`text` as one quoted block under `tag`: the tag line, each line quoted and escaped, the closing line.
    `splitlines` breaks on every kind of line break, so none can smuggle an unquoted line in. `marks`:
    (position in `text`, our own one-line mark) inserted unescaped after escaping (an evidence check's)."""
    opening = " ".join([tag, *(f'{name}="{attribute(value)}"' for name, value in attributes.items())])
    if marks:
        text = _MARK_CHARS.sub("", text)
        for position, _ in sorted(marks, key=lambda m: m[0], reverse=True):
            text = text[:position] + _MARK + text[position:]
    lines = [QUOTE + escape(line) for line in text.strip().splitlines() or [""]]
    if marks:
        shown = iter(m for _, m in sorted(marks, key=lambda m: m[0]))
        lines = [_MARK_AT.sub(lambda _: " " + next(shown), line) for line in lines]
    return "\n".join([f"<{opening}>", *lines, f"</{tag}>"])


def quote_turn(turn: Turn, *, label: str | None = None, text: str | None = None,
               marks: Sequence[tuple[int, str]] = ()) -> str:
    """One debater's turn, named by its round, letter (`label`: the letter a reader sees it under),
    role and kind. `text`: the turn's text as this reader should see it (relabelled), when not its own;
    `marks`: our marks into that text (the evidence checks of its citations)."""
    return quote_block("turn", turn.text if text is None else text, marks, round=turn.round,
                       debater=label or turn.seat, role=turn.role, kind=turn.kind)


def with_quoting_rules(system: str) -> str:
    """A system prompt for a call that reads quoted turns, told how they read and that they never instruct."""
    return f"{system}\n\n{render('quoted_turns')}"
