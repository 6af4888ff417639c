"""The audience: notes from people watching a debate, taken at the start of each round.

An `Audience` answers, for a debate and a round, the notes that reach that round's prompts (at most
MAX_INTERJECTIONS_PER_ROUND). `LogAudience` takes the notes waiting in the log (a chat user's
interjection, or the facts given with `continue`); the CLI's interactive mode reads them from stdin.
The engine asks once per round, as one step, so a resumed debate gets the same notes back.

Every note is untrusted text. `audience_block` renders the notes taken so far as one block that every
debater's prompt and the judge's end with (orchestrator/prompts/audience.txt): each note labelled with
its author and round, every line of it quoted, and anything that could close the quote or forge a
label escaped (orchestrator/debate/quoting.py, which quotes the debaters' turns the same way), so nothing
a note says can pass for an instruction or for another part of the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from orchestrator.debate.quoting import quote_block
from orchestrator.log import DebateLog
from orchestrator.models import MAX_INTERJECTIONS_PER_ROUND, Interjection
from orchestrator.prompts import render


class Audience(Protocol):
    async def take(self, debate_id: str, round: int) -> list[Interjection]:
        """The notes for `round`'s prompts (at most MAX_INTERJECTIONS_PER_ROUND); asked once per round."""
        ...


class LogAudience:
    """The notes waiting in the log, marked there with the round that took them."""

    def __init__(self, store: DebateLog) -> None:
        self.store = store

    def __repr__(self) -> str:
        return "LogAudience()"

    async def take(self, debate_id: str, round: int) -> list[Interjection]:
        return await self.store.take_interjections(debate_id, round, MAX_INTERJECTIONS_PER_ROUND)


def quote_note(note: Interjection) -> str:
    """One note: its label line (author, round, kind), each line of its text quoted and escaped, the closing line."""
    kind = "new facts given when the debate was continued" if note.kind == "facts" else "audience note"
    return quote_block("audience_note", note.text, **{"from": note.author.strip() or "someone",
                                                     "round": note.round or "?", "kind": kind})


def audience_block(notes: Sequence[Interjection]) -> str:
    """What a prompt ends with once any note was taken; "" without notes."""
    if not notes:
        return ""
    return render("audience", notes="\n\n".join(quote_note(n) for n in notes))


def with_audience(prompt: str, notes: Sequence[Interjection]) -> str:
    block = audience_block(notes)
    return f"{prompt}\n\n{block}" if block else prompt
