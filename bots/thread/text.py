"""Text that is safe to post: split to a platform's limit without breaking code blocks, never pinging."""

from __future__ import annotations

import re

from orchestrator.safety import strip_controls

_FENCE = re.compile(r"^\s*```([\w+#.-]{0,30})")  # a language name, never a whole line of junk
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
