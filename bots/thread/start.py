"""Starting a debate in a thread, written once for every platform: the order of the steps and their undo.

A platform hands `start_in_thread` a `RootPoster` (how to post its root message, opening its thread, and take it
back). Everything else is here, in order: (1) the request checked and admitted (`bots.commands.chat_spec`: channel
defaults, chat policy, quotas; its slot reserved in the log), then its brief read (orchestrator/brief); (2) the root
posted (a `RootRefused` gives the slot back and tells the user why); (3) the debate recorded with its thread, before
a worker or a restarted front needs it; (4) the thread's sink opened (it records the root under its key); (5) the
debate enqueued under the request's key: when another debate already holds that key (a retry past the log's claim)
this one is withdrawn (sink closed, root deleted and marked final, slot given back); (6) the front's tailer follows
the workers' stream into the sink. Anything that fails before step 5 is done undoes what was done: the sink closed,
the debate ended failed with the reason, its slot given back; so is a root that takes longer than START_POST_S to
post. A front killed before step 4 leaves an admitted debate with no root recorded: the fronts' sweep ends it once no
front can still be starting it (`tail.FrontTailer`, START_LIMIT_S), and a start that gets past step 4 after that
withdraws, telling the user. A rematch takes the same path (`StartDebate.rematch_of`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from bots.commands import CommandError, StartDebate, chat_spec
from bots.thread.keys import ROOT
from bots.thread.pacing import Pacer
from bots.thread.sink import ThreadSink
from bots.thread.surface import Surface
from bots.thread.tail import FrontTailer
from orchestrator.app import NOT_A_FRONT, Core
from orchestrator.brief.gather import Material, read_brief
from orchestrator.brief.models import Brief
from orchestrator.models import DebateSpec

log = logging.getLogger(__name__)

START_POST_S = 60.0  # how long posting the root (and opening its thread) may take: within START_LIMIT_S
TOO_SLOW = "That debate took too long to start and was called off; please try again."


class RootRefused(Exception):
    """The platform would not take the root message; `user_text` says what to do, `reason` goes in the log."""

    def __init__(self, user_text: str, reason: str) -> None:
        super().__init__(user_text)
        self.user_text = user_text
        self.reason = reason


@dataclass(frozen=True)
class PostedRoot:
    """A root message that was posted: the surface writing the debate's thread, and the ids the log keeps."""

    surface: Surface[Any]
    root_id: str  # the root message's platform id
    thread: str  # the log's `thread` column (Slack: the root's ts; Discord: the thread channel's id)


class RootPoster(Protocol):
    """All a platform does to start a debate in a thread."""

    pacer: Pacer  # the budget the debate's thread is written under

    async def post(self, spec: DebateSpec, notes: list[str]) -> PostedRoot:
        """Post the root message (and open its thread, where that is a step of its own); raise
        `RootRefused` when the platform will not take it."""

    async def delete(self, posted: PostedRoot) -> None:
        """Take the root (and its thread) back; failures are logged, never raised."""


@dataclass(frozen=True)
class Origin:
    """Who asks to start a debate, from where, under which request key."""

    platform: str
    channel: str
    user: str
    workspace: str | None
    channel_private: bool
    request_key: str | None


@dataclass
class Started:
    spec: DebateSpec
    sink: ThreadSink
    notes: list[str] = field(default_factory=list)  # what the user is told beside the debate (seating)


async def start_in_thread(core: Core, tailer: FrontTailer | None, command: StartDebate, origin: Origin,
                          poster: RootPoster, materials: Sequence[Material] = ()) -> Started | None:
    """Start `command` as a debate in a new thread; None when the request was a repeat (withdrawn).
    Every refusal is a `CommandError` with one sentence for the user alone. `materials`: what the platform
    read for the brief (a message, its files, its thread); `command.context`'s links are fetched here."""
    if core.feed is None or tailer is None:
        raise CommandError(NOT_A_FRONT)
    spec, notes = await chat_spec(command, core, platform=origin.platform, channel=origin.channel,
                                  requested_by=origin.user, workspace=origin.workspace,
                                  channel_private=origin.channel_private)
    settled, sink = False, None
    try:  # admitted: from here on, a debate that does not start must give its slot back
        wanted = [*materials, *(Material.from_url(link) for link in command.context)]
        kept = await _rematched_brief(core, command.rematch_of)
        if wanted or kept.sources:  # read before the root is posted, so it lists them; what failed: a notice
            spec = spec.model_copy(update={"brief": await read_brief(wanted, core.settings, kept)})
        try:
            async with asyncio.timeout(START_POST_S):
                posted = await poster.post(spec, notes)
        except TimeoutError:
            raise CommandError(TOO_SLOW) from None
        except RootRefused as exc:
            log.info("%s: root message for %s refused: %s", origin.platform, spec.id, exc.reason)
            await core.abandon(spec.id, exc.reason)
            settled = True  # nothing more to undo
            raise CommandError(exc.user_text) from None
        spec = spec.model_copy(update={"thread": posted.thread})
        await core.record_start(spec)
        sink = await ThreadSink.open(posted.surface, poster.pacer, core.store, spec, posted.root_id)
        if not await _still_running(core, spec.id):  # a sweep ended it meanwhile (the start took too long)
            settled = True
            await sink.aclose()
            await poster.delete(posted)
            await core.show_message(spec.id, ROOT, posted.surface.platform, posted.surface.root_channel,
                                    posted.root_id, final=True)  # nothing to resume
            raise CommandError(TOO_SLOW)
        holder = await core.feed.enqueue(spec, origin.request_key)
        settled = True
        if holder != spec.id:
            await _withdraw(core, poster, posted, sink, spec.id, holder)
            return None
        tailer.follow(spec.id, sink)
    except BaseException as exc:
        if not settled:
            if sink is not None:
                await sink.aclose()
            await core.abandon(spec.id, f"it could not start: {str(exc) or type(exc).__name__}")
        raise
    return Started(spec, sink, notes)


async def _rematched_brief(core: Core, original: str | None) -> Brief:
    """A rematch keeps the brief of the debate it replays (which its asker was allowed to see: checked when
    the rematch was asked for)."""
    if original is None:
        return Brief()
    record = await core.debate(original, None, turns=False)
    return record.brief if record is not None else Brief()


async def _still_running(core: Core, debate_id: str) -> bool:
    return await core.debate_status(debate_id) == "running"


async def _withdraw(core: Core, poster: RootPoster, posted: PostedRoot, sink: ThreadSink, debate_id: str,
                    holder: str) -> None:
    """The request started debate `holder` already: take back the root, thread and slot of `debate_id`."""
    log.info("%s: the request already holds debate %s; %s withdrawn", posted.surface.platform, holder, debate_id)
    await sink.aclose()
    await poster.delete(posted)
    await core.show_message(debate_id, ROOT, posted.surface.platform, posted.surface.root_channel, posted.root_id,
                            final=True)  # nothing to resume
    await core.abandon(debate_id, f"a repeat of the request that started debate {holder}")
