"""Discord's surface for `bots.thread`: post and edit one message, Discord's limits, and how a debate looks.

Messages are the keyword arguments of `send`/`edit` (`content`, `embed`, `view`); the embeds come from
`bots.discord.render`. A debate's root message is in the channel where `/debate` was used and its turns
go into a public thread on it, a channel of its own. Everything is written with the bot token
(interaction tokens die after 15 minutes), with `allowed_mentions` none on every send and edit (edits
are re-parsed), and a 429 discord.py gave up on is retried (`with_retry`), so no text is lost to a rate
limit. Discord allows about 5 writes per 5 s per channel, edits included: the bot's one `Pacer` holds
one budget per channel id, shared by every debate there (thread creation, root edits, quotes).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import discord

from bots.discord.buttons import root_view, verdict_view
from bots.discord.render import (
    ended_embed,
    final_status,
    judge_pick,
    root_embed,
    seat_colour,
    seat_title,
    turn_header,
    verdict_embed,
    verdict_embeds,
    with_tally,
)
from bots.thread import STRICT, Ended, Limits, Paced, Pacer, RootState, Urgency, run_to_completion
from bots.thread.text import neutralize_discord, split_message
from orchestrator.events import Notice, RoundStarted, TurnStarted
from orchestrator.log import Tally
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict

log = logging.getLogger(__name__)

PLATFORM = "discord"
NO_MENTIONS = discord.AllowedMentions.none()
CONTENT_LIMIT = 2000
EMBED_TEXT_LIMIT = 4000  # embed description is 4,096; keep room for the author line within 6,000
T = TypeVar("T")

Message = dict[str, Any]  # keyword arguments for send / edit
Channel = discord.Thread | discord.TextChannel | discord.PartialMessageable
# Strict priorities, then arrival: opening a thread first (nothing of its debate can show before it),
# progress on a root last (a newer state replaces it anyway), everything else in the order it came.
WRITE_ORDER = {Urgency.OPEN: 0.0, Urgency.USER: STRICT, Urgency.TEXT: STRICT, Urgency.REPLY: STRICT,
               Urgency.STATUS: 2 * STRICT}


def discord_limits(writes: int = 5, window: float = 5.0, edit_interval: float = 1.2) -> Limits:
    """`writes` per `window` seconds per channel, edits included; one message edited at most every
    `edit_interval`. A turn's message shows a placeholder as soon as the turn begins."""
    return Limits(channel_writes=writes, channel_window=window, edit_interval=edit_interval, edits_use_channel=True,
                  write_order=WRITE_ORDER)


async def with_retry(action: Callable[[], Awaitable[T]], attempts: int = 4) -> T:
    """Run a write; on a 429 discord.py gave up on (no `Via`, or too long), wait and try again."""
    for attempt in range(attempts):
        last = attempt == attempts - 1
        try:
            return await action()
        except discord.RateLimited as exc:
            if last:
                raise
            delay = exc.retry_after
        except discord.HTTPException as exc:
            if exc.status != 429 or last:
                raise
            delay = float(exc.response.headers.get("Retry-After", 1.0))
        log.warning("Discord rate limit; retrying in %.2fs (attempt %d)", delay, attempt + 1)
        await asyncio.sleep(delay)
    raise RuntimeError("unreachable: the last attempt returns or raises")


NONCE_CHARS = 25  # Discord's limit on a message nonce


def message_nonce(channel_id: str, key: str) -> str:
    """The nonce of the message `key` in `channel_id` (a debate's thread is a channel of its own): the same
    for every post of that key, distinct across channels and keys, at most NONCE_CHARS characters."""
    return hashlib.sha256(f"{channel_id}:{key}".encode()).hexdigest()[:NONCE_CHARS]


class DiscordThread:
    """One debate's root message (in `root_channel`) and its thread; `notes` show on the root message."""

    platform = PLATFORM
    stream_limit = EMBED_TEXT_LIMIT

    def __init__(self, thread: Channel, root_channel: Channel, *, notes: Sequence[str] = (),
                 page: str | None = None) -> None:
        self.thread = thread
        self.page = page  # the debate page's link (bots/page): a link button on the root and the verdict
        self.channel = root_channel
        self.thread_channel = str(thread.id)
        self.root_channel = str(root_channel.id)
        self.notes = list(notes)

    async def post(self, message: Message, *, in_thread: bool = True) -> str:
        target = self.thread if in_thread else self.channel
        sent = await with_retry(lambda: target.send(allowed_mentions=NO_MENTIONS, **message))
        return str(sent.id)

    async def post_keyed(self, message: Message, key: str, *, in_thread: bool = True) -> str:
        """`post` with a nonce made of the channel and `key`, enforced (discord.py sends `enforce_nonce` with
        any nonce given): the same key posted again within Discord's window, after a kill or a lost answer,
        gives back the message Discord took the first time instead of a second one."""
        target = self.thread if in_thread else self.channel
        nonce = message_nonce(str(target.id), key)
        sent = await with_retry(lambda: target.send(allowed_mentions=NO_MENTIONS, nonce=nonce, **message))
        return str(sent.id)

    async def edit(self, message_id: str, message: Message, *, in_thread: bool = True) -> None:
        target = (self.thread if in_thread else self.channel).get_partial_message(int(message_id))
        await with_retry(lambda: target.edit(allowed_mentions=NO_MENTIONS, **message))

    def root(self, spec: DebateSpec, state: RootState) -> Message:
        """The root's status; while the debate runs it carries the Interject button, taken off at the end."""
        if isinstance(state, Ended):
            verdict = None if state.verdict is None else verdict_embed(spec, state.verdict, state.outcome, state.tally)
            status = final_status(state.outcome, verdict)
            return {"embed": root_embed(spec, status=status, notes=self.notes),
                    "view": root_view(spec, self.page, running=False)}
        status = "⏳ Starting…" if state.round is None else f"⏳ {_progress(state.round)}"
        return {"embed": root_embed(spec, status=status, notes=self.notes), "view": root_view(spec, self.page)}

    def round(self, event: RoundStarted) -> Message | None:
        return {"content": f"**{neutralize_discord(_progress(event))}**"}

    def turn_header(self, event: TurnStarted) -> str:
        return turn_header(event)

    def neutralize(self, text: str) -> str:
        return neutralize_discord(text)

    def turn(self, seat: Seat, chunk: str) -> Message:
        embed = discord.Embed(description=chunk, colour=seat_colour(seat.label))
        return {"embed": embed.set_author(name=seat_title(seat)[:256])}

    def turn_ending(self, turn: Turn) -> str | None:
        if turn.status != "failed":
            return None
        failed = f"⚠️ This turn failed: {turn.error or 'no answer'}"
        return f"{turn.text}\n\n{failed}" if turn.text else failed

    def notice(self, event: Notice) -> list[Message]:
        icon = "⚠️" if event.level == "warning" else "ℹ️"
        text = f"{icon} {neutralize_discord(event.text)}"
        return [{"content": chunk} for chunk in split_message(text, CONTENT_LIMIT)]

    def verdict(self, spec: DebateSpec, verdict: Verdict, tally: Tally, outcome: Outcome | None) -> Message:
        return verdict_message(spec, verdict, tally, outcome, self.page)

    def ended(self, outcome: Outcome) -> Message | None:
        return {"embed": ended_embed(outcome)}


def verdict_message(spec: DebateSpec, verdict: Verdict, tally: Tally, outcome: Outcome | None,
                    page: str | None = None) -> Message:
    """The verdict message, its embeds and buttons, and the debate page's link (the one place it is drawn)."""
    return {"embeds": verdict_embeds(spec, verdict, outcome, tally), "view": verdict_view(spec, page)}


def voted(embeds: Sequence[discord.Embed], spec: DebateSpec, verdict: Verdict, tally: Tally) -> Message:
    """A posted verdict message after a vote: its tally and judge-beside-team lines replaced, the rest as
    posted (the judge's points keep the room the layout gave them)."""
    labels = tuple(seat.label for seat in spec.seats)
    first, *rest = embeds
    return {"embeds": [with_tally(first, tally, labels, judge_pick(verdict)), *rest]}


def _progress(event: RoundStarted) -> str:
    title = f" · {event.title}" if event.title else ""
    return f"Round {event.round} of {event.total}{title}"


async def open_thread(pacer: Pacer, message: discord.Message, *, attempts: int, **options: Any) -> discord.Thread:
    """A public thread on a debate's root message: a write in the parent channel, sharing its budget with
    every other debate there, and first in line, since nothing of this debate can show before it."""
    async with pacer.posting(str(message.channel.id), Urgency.OPEN):
        return await run_to_completion(with_retry(lambda: message.create_thread(**options), attempts))


async def post_in_channel(pacer: Pacer, channel: Channel, message: Message, urgency: Urgency = Urgency.USER) -> str:
    """Post outside any debate's thread (a quote), through the channel's budget; returns the message id."""
    return await Paced(DiscordThread(channel, channel), pacer).post(lambda: message, urgency, in_thread=False)
