"""Model text in Slack: standard Markdown where a `markdown` block can go, Slack's `mrkdwn` where not.

Models write standard Markdown, and Slack renders it itself in a `markdown` block, so turns, notices and the
verdict's prose go there as written, made inert first (`neutralize_markdown`: no pings, no links, nothing that
escapes its block). Everything else (App Home, modals, ephemeral answers, a message's `text`) speaks `mrkdwn`:
`to_mrkdwn` converts the same Markdown, and `plain_text` gives the notification fallback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from bots.thread.text import ZWSP, outside_code, segments, truncate
from orchestrator.safety import strip_controls

MARKDOWN_LIMIT = 12_000  # characters across every markdown block of one message (Slack's limit)

_IMAGE = re.compile(r"!\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)")
_LINK = re.compile(r"\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)")
_LINK_DEF = re.compile(r"(?m)^(\s{0,3}\[[^\]\n]+\]):")
_PROSE_ANGLE = re.compile(r"<(?=\S)")
_BARE_PING = re.compile(r"@(channel|here|everyone)", re.IGNORECASE)
_CODE_CONTROL = re.compile(r"<(?=[!@#]|[a-z][a-z0-9+.-]*:)", re.IGNORECASE)
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)(\d{1,9})[.)]\s+(.*)$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_BOLD = re.compile(r"\*\*(?!\s)(.+?)(?<!\s)\*\*|__(?!\s)(.+?)(?<!\s)__")
_STAR_ITALIC = re.compile(r"(?<![\w*])\*(?![\s*])([^*\n]+?)(?<![\s*])\*(?![\w*])")
_UNDER_ITALIC = re.compile(r"(?<![\w_])_(?![\s_])([^_\n]+?)(?<![\s_])_(?![\w_])")
_STRIKE = re.compile(r"~~(?!\s)(.+?)(?<!\s)~~")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~>])")
BOLD_MARK = "\x00"  # stands for mrkdwn's bold `*` while italics are converted (strip_controls drops NULs)


# -- making model text inert ------------------------------------------------------------------------


def _inert_prose(text: str) -> str:
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)  # a link renders as its text: model text never carries one
    text = _LINK_DEF.sub(lambda m: m.group(1) + ZWSP + ":", text)
    text = text.replace("](", "]" + ZWSP + "(")  # whatever the patterns above missed
    return _PROSE_ANGLE.sub("<" + ZWSP, text)


def _inert_code(code: str) -> str:
    """Code shows as written, but never opens a Slack control sequence, and a `](` in it gets a
    zero-width space: a message split through a code span leaves part of it outside code, where it must
    not become a link either."""
    return _CODE_CONTROL.sub("<" + ZWSP, code).replace("](", "]" + ZWSP + "(")


def neutralize_markdown(text: str) -> str:
    """Model text for a `markdown` block: its Markdown kept, made inert, with no HTML entity in it (a
    markdown block shows `&lt;` as those four characters). Outside code, a `<` before anything but a
    space gets a zero-width space after it (so `<!channel>`, `<@U1>`, `<https://…>` and `<a@b.example>`
    are neither controls nor autolinks, and show as written), and `[text](url)` / `![alt](url)` become
    their text; inside code, a `<` that could start a mention or link gets one. Bare
    @channel/@here/@everyone get one too; NUL, terminal and bidi controls are dropped. `to_mrkdwn` and
    `plain_text` write the entities mrkdwn needs themselves."""
    text = outside_code(strip_controls(text), _inert_prose, _inert_code)
    return _BARE_PING.sub(lambda m: "@" + ZWSP + m.group(1), text)


def markdown_block(text: str, block_id: str | None = None) -> dict[str, Any]:
    """A `markdown` block of text already made inert, cut to the message's limit (Slack takes one in
    messages an app posts or updates)."""
    block: dict[str, Any] = {"type": "markdown", "text": truncate(text, MARKDOWN_LIMIT)}
    if block_id:
        block["block_id"] = block_id
    return block


def fit_markdown(blocks: list[dict[str, Any]], limit: int = MARKDOWN_LIMIT) -> list[dict[str, Any]]:
    """Cut the markdown blocks of one message so together they hold at most `limit` characters, later
    blocks first; a block left with nothing is dropped."""
    total = sum(len(b["text"]) for b in blocks if b.get("type") == "markdown")
    if total <= limit:
        return blocks
    fitted: list[dict[str, Any]] = []
    room = limit
    for block in blocks:
        if block.get("type") != "markdown":
            fitted.append(block)
            continue
        if room < 20:
            continue
        text = truncate(block["text"], room)
        room -= len(text)
        fitted.append({**block, "text": text})
    return fitted


# -- mrkdwn and plain text -------------------------------------------------------------------------------


def _outside_inline_code(text: str, transform: Callable[[str], str], code: Callable[[str], str]) -> str:
    out, at = [], 0
    for match in _INLINE_CODE.finditer(text):
        out += [transform(text[at:match.start()]), code(match.group(0))]
        at = match.end()
    out.append(transform(text[at:]))
    return "".join(out)


def _cells(row: str) -> list[str]:
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)]


def _table_rows(table: str) -> list[list[str]]:
    lines = [line for line in table.splitlines() if line.strip()]
    return [_cells(line) for index, line in enumerate(lines) if index != 1]  # line 1 is the |---| rule


def _plain_inline(text: str, *, entities: bool = True) -> str:
    """Inline Markdown as plain text; `entities`: with `&`, `<` and `>` as mrkdwn needs them (not for text
    that is escaped whole afterwards, a table going into a code block)."""
    escape = _escape if entities else _unchanged

    def prose(part: str) -> str:
        part = _BOLD.sub(lambda m: m.group(1) or m.group(2), part)
        part = _STAR_ITALIC.sub(r"\1", part)
        part = _UNDER_ITALIC.sub(r"\1", part)
        part = _STRIKE.sub(r"\1", part)
        return escape(_ESCAPED.sub(r"\1", part).replace("](", "]" + ZWSP + "("))  # pieced together, still inert

    return _outside_inline_code(text, prose, lambda code: escape(code.strip("`").strip()))


def _unchanged(text: str) -> str:
    return text


def _escape(code: str) -> str:
    """Code on a mrkdwn surface: Slack reads `&`, `<` and `>` there too, so they go as entities (and a
    `](` is broken, as in prose: a client that reads Markdown links must not find one)."""
    return code.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("](", "]" + ZWSP + "(")


def _mrkdwn_inline(text: str) -> str:
    def prose(part: str) -> str:
        part = _BOLD.sub(lambda m: BOLD_MARK + (m.group(1) or m.group(2)) + BOLD_MARK, part)
        part = _STAR_ITALIC.sub(r"_\1_", part)
        part = _STRIKE.sub(r"~\1~", part)
        return _escape(_ESCAPED.sub(r"\1", part))

    return _outside_inline_code(text, prose, _escape)


def _aligned(rows: list[list[str]]) -> str:
    """A table's rows as monospace text, columns padded to line up."""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    sizes = [max(len(r[c]) for r in rows) for c in range(width)]
    lines = [" | ".join(cell.ljust(sizes[c]) for c, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "-+-".join("-" * size for size in sizes))
    return "\n".join(lines)


def _mrkdwn_line(line: str) -> str:
    if _RULE.match(line):
        return "―――"
    if heading := _HEADING.match(line):
        title = _plain_inline(heading.group(1))
        return f"{BOLD_MARK}{title}{BOLD_MARK}" if title else ""
    if bullet := _BULLET.match(line):
        depth = len(bullet.group(1).expandtabs(4)) // 2
        return "    " * depth + ("•" if depth % 2 == 0 else "◦") + " " + _mrkdwn_inline(bullet.group(2))
    if numbered := _NUMBERED.match(line):
        depth = len(numbered.group(1).expandtabs(4)) // 3
        return "    " * depth + f"{numbered.group(2)}. " + _mrkdwn_inline(numbered.group(3))
    if quote := _QUOTE.match(line):
        return "> " + _mrkdwn_inline(quote.group(1))
    return _mrkdwn_inline(line)


def _fence_body(fence: str) -> str:
    lines = fence.splitlines()
    body = lines[1:-1] if len(lines) > 1 and set(lines[-1].strip()) == {"`"} else lines[1:]
    return "\n".join(body)


def to_mrkdwn(markdown: str) -> str:
    """Standard Markdown (made inert) as Slack `mrkdwn`: `**b**` → `*b*`, `*i*` → `_i_`, `~~s~~` → `~s~`,
    headings as bold lines, lists with • and ◦ by depth, numbered lists as written, quotes kept, fences
    without their language (mrkdwn would show it), tables as aligned code blocks."""
    out: list[str] = []
    for segment in segments(markdown):
        text = segment.text.rstrip("\n")
        ending = segment.text[len(text):]
        if segment.kind == "fence":
            out.append("```\n" + _escape(_fence_body(text)) + "\n```" + ending)
        elif segment.kind == "table":
            rows = [[_plain_inline(cell, entities=False) for cell in row] for row in _table_rows(text)]
            out.append("```\n" + _escape(_aligned(rows)) + "\n```" + ending)
        else:
            out.append("\n".join(_mrkdwn_line(line) for line in text.split("\n")) + ending)
    return "".join(out).replace(BOLD_MARK, "*")


def _plain_line(line: str) -> str:
    if _RULE.match(line):
        return ""
    if heading := _HEADING.match(line):
        return _plain_inline(heading.group(1))
    if bullet := _BULLET.match(line):
        return "  " * (len(bullet.group(1).expandtabs(4)) // 2) + "• " + _plain_inline(bullet.group(2))
    if numbered := _NUMBERED.match(line):
        return numbered.group(1) + f"{numbered.group(2)}. " + _plain_inline(numbered.group(3))
    if quote := _QUOTE.match(line):
        return _plain_inline(quote.group(1))
    return _plain_inline(line)


def plain_text(markdown: str) -> str:
    """Standard Markdown (made inert) as the plain text of a notification: no emphasis marks, heading
    hashes, list stars, backticks or table pipes left; table cells joined by " · "."""
    out: list[str] = []
    for segment in segments(markdown):
        text = segment.text.rstrip("\n")
        ending = segment.text[len(text):]
        if segment.kind == "fence":
            out.append(_escape(_fence_body(text)) + ending)
        elif segment.kind == "table":
            rows = [" · ".join(_plain_inline(cell) for cell in row) for row in _table_rows(text)]
            out.append("\n".join(rows) + ending)
        else:
            out.append("\n".join(_plain_line(line) for line in text.split("\n")) + ending)
    return "".join(out)


def safe_mrkdwn(text: str, limit: int) -> str:
    """Model text for a `mrkdwn` surface: made inert, converted, cut to `limit`."""
    return truncate(to_mrkdwn(neutralize_markdown(text)), limit)
