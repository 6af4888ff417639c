"""A debater's text with our quoting convention taken out where the model copied it.

Other turns reach a model quoted (quoting.py): a tag line such as `<turn round="1" debater="A" …>`, every line
prefixed with "| ", `<` and `>` escaped, a closing `</turn>`. Small models copy that into their own answer, which is
not what the debater means to say, so before a turn is shown or stored our tags and prefix are taken out: by
`EchoFilter` as the text streams, by `strip_echo` from a whole text, with the same rules so the two agree.
"""

from __future__ import annotations

import re

from orchestrator.providers.base import DeltaCallback

TAGS = ("turn", "summary", "verdict", "audience_note", "answer", "final_answer", "ranking")
_NAMES = "|".join(TAGS)
_LT = r"(?:<|&lt;)+"
_GT = r"(?:>|&gt;)+"
_OPENING = re.compile(rf"^\s*{_LT}\s*/?\s*(?:{_NAMES})\b[^<>\n]*?{_GT}[ \t]*", re.IGNORECASE)
_CLOSING = re.compile(rf"[ \t]*{_LT}\s*/\s*(?:{_NAMES})\s*{_GT}\s*$", re.IGNORECASE)
_PREFIX = re.compile(r"^\|(?: |$)")
_LINE_END = re.compile(r"(?<=\n)")


def _is_table_row(line: str) -> bool:
    text = line.strip()
    return text.startswith("|") and text.endswith("|") and text.count("|") >= 2


def _unprefixed(line: str) -> str:
    if line.startswith("| "):
        line = line[2:]
    elif line.rstrip() == "|":
        line = ""
    return line.replace("&lt;", "<").replace("&gt;", ">")


class EchoFilter:
    """`feed` each delta and send on what it returns, then what `finish` returns.

    A line is held back only while it may still turn out to be a tag (it starts with `<` or `&`) or decides
    whether the turn is prefixed (the first line of text), and in a prefixed turn until it ends; any other
    line is sent as it streams."""

    def __init__(self) -> None:
        self._line = ""  # the current line, held back
        self._passing = False  # the current line is being sent as it comes
        self._prefixed: bool | None = None  # decided by the first line of text
        self.echoed = False  # a tag or the prefix was taken out

    def feed(self, delta: str) -> str:
        out: list[str] = []
        for piece in _LINE_END.split(delta):
            if not piece:
                continue
            ended = piece.endswith("\n")
            if self._passing:
                out.append(piece)
            elif ended:
                shown = self._complete(self._line + piece[:-1])
                self._line = ""
                if shown is not None:
                    out.append(shown + "\n")
            else:
                self._line += piece
                if self._may_pass(self._line):
                    out.append(self._line)
                    self._line = ""
                    self._passing = True
            if ended:
                self._passing = False
        return "".join(out)

    def finish(self) -> str:
        line, self._line = self._line, ""
        if self._passing or not line:
            return line
        return self._complete(line) or ""

    def wrap(self, on_delta: DeltaCallback) -> DeltaCallback:
        """`on_delta`, sent each delta as this filter lets it through."""

        async def filtered(delta: str) -> None:
            if shown := self.feed(delta):
                await on_delta(shown)

        return filtered

    def _may_pass(self, line: str) -> bool:
        """Whether the start of a line decides it can be sent unchanged, as it streams."""
        start = line.lstrip()
        if self._prefixed or not start or start[0] in "<&":
            return False
        if self._prefixed is None:
            if start[0] == "|":
                return False
            self._prefixed = False
        return True

    def _complete(self, line: str) -> str | None:
        """A whole line as it is shown, or None to drop it. A tag of ours (opening or closing, `<…>` or
        `&lt;…&gt;`, doubled brackets too) at the start of the line, or a closing one at its end, is removed,
        and a line left empty by that is dropped. When the first line of text starts with "| " (and is no
        Markdown table row) the turn is prefixed: every line loses its "| ", and the `&lt;` / `&gt;` our
        quoting wrote become `<` / `>` again."""
        if self._prefixed:
            line = _unprefixed(line)
        cleaned = _CLOSING.sub("", _OPENING.sub("", line, count=1))
        if cleaned != line:
            self.echoed = True
            if not cleaned.strip():
                return None
        if self._prefixed is None and cleaned.strip():
            self._prefixed = bool(_PREFIX.match(cleaned)) and not _is_table_row(cleaned)
            if self._prefixed:
                self.echoed = True
                return self._complete(cleaned)
        return cleaned


def strip_echo(text: str) -> str:
    """`text` as `EchoFilter` streams it, and without a closing tag of ours at its very end (one that
    ends a line the filter had already let through); trimmed when anything was taken out. This is the text
    stored, which replaces the streamed one when the turn ends."""
    echo = EchoFilter()
    shown = echo.feed(text) + echo.finish()
    trimmed = _CLOSING.sub("", shown.rstrip())
    return trimmed.strip() if echo.echoed or trimmed != shown.rstrip() else shown
