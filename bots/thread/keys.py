"""The one scheme of message keys, for every platform: what each message a debate creates is called in the log
(`messages` rows, written with `set_message` as soon as the platform has answered the post, and again with `final`
once the message shows its final text). A renderer that resumes a debate finds each message it posted under its key
and edits it instead of posting again. A message showing an event is named by the event's key
(orchestrator/events.py) and its part (`message_key`).
"""

from __future__ import annotations

from orchestrator import events

# Where the surface posts with keys (`bots.thread.surface.Keyed`: Slack by the message's metadata, Discord by an
# enforced nonce), a post is announced first: its key is recorded with the id PENDING before it goes out. A post
# whose answer never came back leaves that row, and whoever posts the key next looks the message up on the
# platform first, or posts it again under the same nonce (`intents.py`).
PENDING = ""  # a key's message id while its post is under way: the post may have landed, its id not known
ROOT = "root"  # the channel message the thread hangs from
VERDICT = events.verdict_key()  # the judge's verdict, with its vote and quote buttons
ENDED = "ended"  # what a debate that ended without a verdict posts in its thread (where the platform does)


def message_key(event_key: str, part: int) -> str:
    """Message `part` (0, 1, …: a long text continues in more messages) of what the event `event_key` shows.

    The stored shapes predate event keys and stay, so rows written by earlier versions are found on resume:
    `turn:{round}:{seat}:{kind}[:t{take}]:{part}`, `notice:{hash}:{part}`, `interjection:{id}:{part}`,
    `round:{round}` (the marker shows a round's start), `verdict[:N]`."""
    return f"{event_key}:{part}"


def root_key(segment: int = 1) -> str:
    """The root message's record for a debate's `segment`: ROOT for the first; `root:N` (the same message)
    for a continuation, recorded when it starts and final once the root shows that segment's end, so a
    front restarted meanwhile finds the thread still to finish (`threads_to_resume(platform, root_key(N))`)."""
    return ROOT if segment <= 1 else f"{ROOT}:{segment}"


def verdict_key(segment: int = 1) -> str:
    """The verdict of a debate's `segment` (its VerdictReached's key): VERDICT for the first, `verdict:N`
    after each `continue` (the earlier verdicts stay, with their buttons)."""
    return events.verdict_key(segment)


def ended_key(segment: int = 1) -> str:
    """What a segment that ended without a verdict posts: ENDED for the first, `ended:N` after."""
    return ENDED if segment <= 1 else f"{ENDED}:{segment}"


def interjection_key(note_id: str, part: int) -> str:
    """One message showing an audience note (or a continuation's new facts) in the thread."""
    return message_key(events.interjection_key(note_id), part)


def turn_key(round_: int, seat: str, kind: str, part: int, take: int = 0) -> str:
    """One message of a turn; a long turn continues in parts 1, 2, … after part 0. A turn played again
    with the same round, seat and kind (`take` 1, 2, …: a round rerun) has messages of its own."""
    return message_key(events.turn_key(round_, seat, kind, take), part)


def round_key(round_: int) -> str:
    """The marker a platform posts when a round starts (where it posts one): the round's key, no part."""
    return events.round_key(round_)


def notice_key(level: str, text: str, part: int) -> str:
    """One message of a notice. A debate logs a notice once per level and text, so that names it."""
    return message_key(events.notice_key(level, text), part)
