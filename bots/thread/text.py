"""Text that is safe to post: split to a platform's limit without breaking code blocks, never pinging."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from orchestrator.safety import strip_controls

_FENCE = re.compile(r"^\s*```([\w+#.-]{0,30})")  # a language name, never a whole line of junk
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$|^\s*\|\s*:?-+:?\s*\|\s*$")
ZWSP = "\u200b"
CLOSE_ROOM = 4  # "\n```": what closing a fence at the end of a chunk adds


@dataclass(frozen=True)
class Segment:
    """A run of lines that splitting keeps together when it can: a fenced code block, a table, or prose."""

    kind: Literal["text", "fence", "table"]
    text: str
    language: str = ""  # a fence's
    closed: bool = True  # a fence's: False while a streamed turn is still inside it


def segments(text: str) -> list[Segment]:
    """`text` as its fenced code blocks, tables (a header row, a `|---|` rule, rows) and the prose between."""
    lines = text.splitlines(keepends=True)
    found: list[Segment] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            found.append(Segment("text", "".join(prose)))
            prose.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            end = next((j for j in range(i + 1, len(lines)) if _closes_fence(lines[j])), None)
            flush()
            stop = len(lines) if end is None else end + 1
            found.append(Segment("fence", "".join(lines[i:stop]), fence.group(1), end is not None))
            i = stop
            continue
        if "|" in line and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
            stop = i + 2
            while stop < len(lines) and "|" in lines[stop] and lines[stop].strip():
                stop += 1
            flush()
            found.append(Segment("table", "".join(lines[i:stop])))
            i = stop
            continue
        prose.append(line)
        i += 1
    flush()
    return found


def _cut_point(text: str, limit: int) -> int:
    """The best place to cut `text` at or before `limit`: a paragraph, a line, a sentence, a space."""
    window = text[:limit]
    for sep in ("\n\n", "\n", ". ", " "):
        at = window.rfind(sep)
        if at >= limit // 2:
            return at + len(sep)
    return limit


def table_as_code(table: str) -> str:
    """A table too big for one message, as a code block: its rows stay aligned and each part still reads."""
    return "```\n" + table.rstrip("\n") + "\n```\n"


def _fence_parts(block: Segment, limit: int, first: int) -> list[str]:
    """A fence too long for one chunk, cut at lines into parts each closed and reopened (same language);
    the first part holds at most `first` characters, the others `limit`."""
    opener = f"```{block.language}\n" if len(block.language) < limit // 8 else "```\n"
    body = block.text.split("\n", 1)[1] if "\n" in block.text else ""
    closer = ""
    if block.closed:
        body, _, closer = body.rstrip("\n").rpartition("\n")
        body += "\n"
        closer += "\n" if block.text.endswith("\n") else ""
    parts: list[str] = []
    rest = block.text.split("\n", 1)[0] + "\n" + body  # the first part keeps the fence line as written
    room = first
    while len(rest) + len(closer) > room:
        cut = _cut_point(rest, room - CLOSE_ROOM)
        parts.append(rest[:cut].rstrip("\n") + "\n```")
        rest, room = opener + rest[cut:], limit
    parts.append(rest + closer)
    return parts


def split_message(text: str, limit: int) -> list[str]:
    """Split into chunks of at most `limit` characters, whole blocks first: a table or a fenced code block
    that fits in one chunk is never cut (it starts the next chunk instead); a fence longer than a chunk is
    closed at the end of each part and reopened (same language) in the next, so each renders on its own;
    a table longer than a chunk becomes a code block, split the same way. Prose is cut at a paragraph,
    a line, a sentence or a space. Shared by every platform's threads (Slack markdown, Discord)."""
    if limit < 20:
        raise ValueError("limit too small to split sensibly")
    chunks: list[str] = []
    current = ""
    for block in segments(text):
        piece = block.text
        if len(current) + len(piece) <= limit:
            current += piece
            continue
        if block.kind == "text":
            while len(current) + len(piece) > limit:
                room = limit - len(current)
                if room < limit // 4 and current:  # too little room left for a useful cut
                    chunks.append(current)
                    current = ""
                    continue
                cut = _cut_point(piece, room)
                chunks.append(current + piece[:cut])
                current, piece = "", piece[cut:]
            current += piece
            continue
        if len(piece) <= limit:  # whole in the next chunk rather than cut
            chunks.append(current)
            current = piece
            continue
        if block.kind == "table":
            code = table_as_code(piece)
            block = Segment("fence", code if piece.endswith("\n") else code.rstrip("\n"))
        if limit - len(current) < limit // 4:  # cut anyway: start it here unless too little room is left
            chunks.append(current)
            current = ""
        *whole, last = _fence_parts(block, limit, limit - len(current))
        if whole:
            chunks.append(current + whole[0])
            chunks.extend(whole[1:])
            current = last
        else:
            current += last
    if current or not chunks:
        chunks.append(current)
    return chunks


def _closes_fence(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 3 and set(stripped) == {"`"}


_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")


def outside_code(text: str, transform: Callable[[str], str], code: Callable[[str], str] = str) -> str:
    """`text` with `transform` applied to everything but fenced code blocks and inline code spans, and
    `code` to those."""
    out: list[str] = []
    for segment in segments(text):
        if segment.kind == "fence":
            out.append(code(segment.text))
            continue
        at = 0
        for match in _INLINE_CODE.finditer(segment.text):
            out += [transform(segment.text[at:match.start()]), code(match.group(0))]
            at = match.end()
        out.append(transform(segment.text[at:]))
    return "".join(out)


_SLACK_BARE = re.compile(r"@(channel|here|everyone)", re.IGNORECASE)  # even inside words: a cut may free one
_MASKED_LINK = re.compile(r"\]\(")


def _unlink(text: str) -> str:
    """Break `[text](url)` so Discord (and Slack's markdown) show it as written, not as a disguised link."""
    return _MASKED_LINK.sub("]" + ZWSP + "(", text)


def neutralize_slack(text: str) -> str:
    """Escape Slack's control characters so `<!channel>`, `<@U1>`, `<!subteam^S1>` and `<url|text>`
    links show as text, put a zero-width space in bare @channel/@here/@everyone, which some clients
    still highlight, and break `[text](url)` links. NUL, terminal and bidi controls are dropped (a
    display name or an old log row can carry them too)."""
    escaped = strip_controls(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _unlink(_SLACK_BARE.sub(lambda m: "@" + ZWSP + m.group(1), escaped))


_DISCORD_MENTION = re.compile(r"<(@[!&]?|#)(\d+)>")
_DISCORD_BARE = re.compile(r"@(everyone|here)", re.IGNORECASE)


def neutralize_discord(text: str) -> str:
    """Defuse @everyone/@here, user, role and channel mentions, and `[text](url)` masked links;
    AllowedMentions.none() on every send and edit is the real guard against pings, this keeps the
    text from reading as one too. NUL, terminal and bidi controls are dropped."""
    text = _DISCORD_BARE.sub(lambda m: "@" + ZWSP + m.group(1), strip_controls(text))
    return _unlink(_DISCORD_MENTION.sub(lambda m: "<" + m.group(1) + ZWSP + m.group(2) + ">", text))


def truncate(text: str, limit: int, marker: str = "…") -> str:
    return text if len(text) <= limit else text[: limit - len(marker)].rstrip() + marker
