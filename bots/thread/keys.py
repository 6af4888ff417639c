"""The one scheme of message keys, for every platform: what each message a debate creates is called in
the log (`messages` rows, written with `set_message` as soon as the platform has answered the post)."""

from __future__ import annotations

ROOT = "root"  # the channel message the thread hangs from
VERDICT = "verdict"  # the judge's verdict, with its vote and quote buttons


def turn_key(round_: int, seat: str, kind: str, part: int) -> str:
    """One message of a turn; a long turn continues in parts 1, 2, … after part 0."""
    return f"turn:{round_}:{seat}:{kind}:{part}"
