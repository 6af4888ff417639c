"""The one scheme of message keys, for every platform: what each message a debate creates is called in
the log (`messages` rows, written with `set_message` as soon as the platform has answered the post, and
again with `final` once the message shows its final text). A continued debate's thread gains the
continued round's turns and a numbered verdict (`verdict_key`). A renderer that resumes a debate finds each
message it already posted under its key: it edits that message instead of posting again.

Where the surface can find a message by its key (`bots.thread.surface.Findable`: Slack, by the message's
metadata), a post is announced first: the key is recorded with the id PENDING before the post goes out.
A post whose answer never came back (the process was killed, the connection dropped) leaves that row
behind, and whoever posts the key next looks the message up on the platform first (`intents.py`)."""

from __future__ import annotations

import hashlib

PENDING = ""  # a key's message id while its post is under way: the post may have landed, its id not known
ROOT = "root"  # the channel message the thread hangs from
VERDICT = "verdict"  # the judge's verdict, with its vote and quote buttons
ENDED = "ended"  # what a debate that ended without a verdict posts in its thread (where the platform does)


def root_key(segment: int = 1) -> str:
    """The root message's record for a debate's `segment`: ROOT for the first; `root:N` (the same message)
    for a continuation, recorded when it starts and final once the root shows that segment's end, so a
    front restarted meanwhile finds the thread still to finish (`threads_to_resume(platform, root_key(N))`)."""
    return ROOT if segment <= 1 else f"{ROOT}:{segment}"


def verdict_key(segment: int = 1) -> str:
    """The verdict of a debate's `segment`: VERDICT for the first, `verdict:N` after each `continue` (the
    earlier verdicts stay, with their buttons)."""
    return VERDICT if segment <= 1 else f"{VERDICT}:{segment}"


def ended_key(segment: int = 1) -> str:
    """What a segment that ended without a verdict posts: ENDED for the first, `ended:N` after."""
    return ENDED if segment <= 1 else f"{ENDED}:{segment}"


def interjection_key(note_id: str, part: int) -> str:
    """One message showing an audience note (or a continuation's new facts) in the thread."""
    return f"interjection:{note_id}:{part}"


def turn_key(round_: int, seat: str, kind: str, part: int, take: int = 0) -> str:
    """One message of a turn; a long turn continues in parts 1, 2, … after part 0. A turn played again
    with the same round, seat and kind (`take` 1, 2, …: a round rerun) has messages of its own."""
    return f"turn:{round_}:{seat}:{kind}" + (f":t{take}" if take else "") + f":{part}"


def round_key(round_: int) -> str:
    """The marker a platform posts when a round starts (where it posts one)."""
    return f"round:{round_}"


def notice_key(level: str, text: str, part: int) -> str:
    """One message of a notice. A debate logs a notice once per level and text, so that names it."""
    digest = hashlib.sha1((level + text).encode(), usedforsecurity=False).hexdigest()[:12]
    return f"notice:{digest}:{part}"
