"""What a platform provides to render a debate into its threads: the `Surface` protocol.

The thread code (`bots.thread.sink`, `live`, `coalesce`) decides what to write, when and in which
order; a surface only knows its platform: how to post and edit one message, and how each part of a
debate looks there. Its writes are never called directly by the thread code's callers: they go through
`bots.thread.coalesce.Paced`, which holds the pacer's slot around them and finishes a write that started.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from orchestrator.events import Notice, RoundStarted, TurnStarted
from orchestrator.log import Tally
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict

M = TypeVar("M")  # one message in the platform's own form (Slack: text and blocks; Discord: send kwargs)


@dataclass(frozen=True)
class Running:
    """A debate under way; `round` None while it is starting."""

    round: RoundStarted | None = None


@dataclass(frozen=True)
class Ended:
    outcome: Outcome
    verdict: Verdict | None
    tally: Tally


RootState = Running | Ended


class Surface(Protocol[M]):
    """One debate's place on one platform: its root message's channel and its thread.

    `post`/`edit` make exactly one platform call each (a 429 the platform's client gave up on may be
    retried inside), never mention anyone, and raise on failure; `in_thread=False` means the root
    message's channel (the root itself, a quote). Posts return the message's platform id.
    """

    platform: str  # the log's platform column: "slack", "discord"
    root_channel: str  # where the root message is: the pacer's channel and the log's
    thread_channel: str  # where the thread's messages go (Slack: the same channel; Discord: the thread)
    stream_limit: int  # characters of turn text one message holds before the turn continues in the next

    async def post(self, message: M, *, in_thread: bool = True) -> str: ...

    async def edit(self, message_id: str, message: M, *, in_thread: bool = True) -> None: ...

    def root(self, spec: DebateSpec, state: RootState) -> M:
        """The root message: the debate, its seats, and how far it is (or how it ended)."""

    def round(self, event: RoundStarted) -> M | None:
        """A marker posted in the thread when a round starts, or None (progress shows on the root only)."""

    def turn_header(self, event: TurnStarted) -> str:
        """The first line of a turn's first message, safe as it is."""

    def neutralize(self, text: str) -> str:
        """Model text made inert on this platform: no pings, no markup that escapes its message."""

    def turn(self, seat: Seat, chunk: str) -> M:
        """One message of a seat's turn holding `chunk` (already neutralized and within `stream_limit`)."""

    def turn_ending(self, turn: Turn) -> str | None:
        """The text a failed or empty turn ends with, or None to show the turn's own text."""

    def notice(self, event: Notice) -> list[M]:
        """A warning or note for the thread, in as many messages as it needs."""

    def verdict(self, spec: DebateSpec, verdict: Verdict, tally: Tally, outcome: Outcome | None) -> M:
        """The verdict with its vote and quote buttons; `outcome` (token counts) once the debate has ended."""

    def ended(self, outcome: Outcome) -> M | None:
        """Posted in the thread when a debate ends without a verdict, or None (the root shows it)."""


@runtime_checkable
class Keyed(Protocol[M]):
    """A surface whose posts can carry their key (optional): posting the same key again within the platform's
    window gives back the message posted first (Discord: the message's nonce, enforced), or tags it so that
    `Findable.find` finds it (Slack). Its keyed posts are announced in the log first (`bots.thread.intents`)."""

    async def post_keyed(self, message: M, key: str, *, in_thread: bool = True) -> str:
        """`post`, the message carrying `key`."""


@runtime_checkable
class Findable(Keyed[M], Protocol[M]):
    """A surface whose thread posts can be found again by their key (optional; Slack has it): a post whose
    answer was lost (a kill -9 or a dropped connection after the platform took it) is looked up instead
    of being posted a second time (`bots.thread.intents`). A `Keyed` surface without `find` posts the key
    again instead, and the platform answers with the message it already has."""

    async def post_keyed(self, message: M, key: str, *, in_thread: bool = True) -> str:
        """`post`, the message tagged with `key` so that `find` finds it."""

    async def find(self, key: str, *, in_thread: bool = True) -> str | None:
        """The id of the message posted with `key`, or None when the platform has none; raises when it
        cannot tell (the caller tries again later rather than risk a second post)."""
