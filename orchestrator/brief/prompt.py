"""The brief as a prompt shows it: the chosen sections, each quoted as untrusted text with its anchor.

Every section is one `quote_block` (orchestrator/debate/quoting.py, the quoting of debaters' turns), so
no line of a document can pose as an instruction, a turn or another source; the reader is told how the
brief reads, which sections it sees when it sees only some, and how to cite them
(orchestrator/prompts/brief.txt).
"""

from __future__ import annotations

from itertools import groupby

from orchestrator.brief import select as selecting
from orchestrator.brief.models import Brief
from orchestrator.brief.select import Selection, select
from orchestrator.debate.quoting import quote_block
from orchestrator.prompts import render


def quote_selection(selection: Selection) -> str:
    """The chosen sections, each one quoted block."""
    return "\n\n".join(
        quote_block("source", shown.source.section_text(shown.section), id=shown.source.label,
                    anchor=shown.section.anchor, title=shown.source.title, kind=shown.source.kind,
                    **({"heading": shown.section.heading} if shown.section.heading else {}))
        for shown in selection.shown)


def what_is_shown(selection: Selection) -> str:
    """One line telling the reader which sections it sees (all, or which of how many)."""
    if selection.complete:
        return f"You are shown the whole brief: {selection.total} sections."
    parts = []
    for label, group in groupby(selection.shown, key=lambda s: s.source.label):
        parts.append(f"{label} " + ", ".join(s.section.anchor for s in group))
    return (f"The brief is longer than fits here: you are shown {len(selection.shown)} of its {selection.total} "
            f"sections, those most relevant to this stage of the debate ({'; '.join(parts)}). Other readers may "
            "be shown other sections.")


def brief_prompt(brief: Brief, about: str, budget: int | None = None) -> str:
    """What a prompt carries of `brief` for a stage about `about`; "" for a debate without one. `budget`:
    characters of the brief a prompt may carry (default `select.PROMPT_CHARS`, read when called)."""
    if not brief.sources:
        return ""
    selection = select(brief, about, selecting.PROMPT_CHARS if budget is None else budget)
    if not selection.shown:
        return ""
    return render("brief", shown=what_is_shown(selection), sections=quote_selection(selection))


def with_brief(prompt: str, brief_text: str) -> str:
    """`prompt` after the brief (the material first, then the task)."""
    return f"{brief_text}\n\n{prompt}" if brief_text else prompt
