"""Text that is safe to post: split to a platform's limit without breaking code blocks, never pinging."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*```(\S*)")
ZWSP = "\u200b"


def _cut_point(text: str, limit: int) -> int:
    """The best place to cut `text` at or before `limit`: a paragraph, a line, a sentence, a space."""
    window = text[:limit]
    for sep in ("\n\n", "\n", ". ", " "):
        at = window.rfind(sep)
        if at >= limit // 2:
            return at + len(sep)
    return limit


def split_message(text: str, limit: int) -> list[str]:
    """Split into chunks of at most `limit` characters; an open ``` block is closed at the end of a
    chunk and reopened (same language) at the start of the next, so each chunk renders on its own."""
    if limit < 20:
        raise ValueError("limit too small to split sensibly")
    chunks: list[str] = []
    rest = text
    reopen = ""
    while rest or not chunks:
        budget = limit - len(reopen) - 4  # room to close a fence: "\n```"
        if len(reopen) + len(rest) <= limit:
            chunk = reopen + rest
            rest = ""
        else:
            cut = _cut_point(rest, budget)
            chunk = reopen + rest[:cut]
            rest = rest[cut:]
        language = _open_fence_language(chunk)
        if language is not None and rest:
            chunk = chunk.rstrip("\n") + "\n```"
            reopen = f"```{language}\n"
        else:
            reopen = ""
        chunks.append(chunk)
        if not rest:
            break
    return chunks


def _open_fence_language(text: str) -> str | None:
    """The language of a ``` block left open at the end of `text`, or None when all are closed."""
    language: str | None = None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if match:
            language = match.group(1) if language is None else None
    return language


_SLACK_BARE = re.compile(r"(?<![\w&])@(channel|here|everyone)\b", re.IGNORECASE)


def neutralize_slack(text: str) -> str:
    """Escape Slack's control characters so `<!channel>`, `<@U1>`, `<!subteam^S1>` show as text, and
    put a zero-width space in bare @channel/@here/@everyone, which some clients still highlight."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SLACK_BARE.sub(lambda m: "@" + ZWSP + m.group(1), escaped)


_DISCORD_MENTION = re.compile(r"<(@[!&]?|#)(\d+)>")
_DISCORD_BARE = re.compile(r"@(everyone|here)", re.IGNORECASE)


def neutralize_discord(text: str) -> str:
    """Defuse @everyone/@here and user, role and channel mentions; AllowedMentions.none() on every
    send and edit is the real guard, this keeps the text from reading as a ping too."""
    text = _DISCORD_BARE.sub(lambda m: "@" + ZWSP + m.group(1), text)
    return _DISCORD_MENTION.sub(lambda m: "<" + m.group(1) + ZWSP + m.group(2) + ">", text)


def truncate(text: str, limit: int, marker: str = "…") -> str:
    return text if len(text) <= limit else text[: limit - len(marker)].rstrip() + marker
