"""What the Slack listeners share: the core, per-workspace pacers, background tasks, and the tailer
that renders every live Slack debate's thread from the workers' event streams."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bots.settings import bot_settings
from bots.slack.scope import ChannelPrivacy, SlackUsers
from bots.slack.surface import slack_limits
from bots.thread import FrontTailer, Limits, Pacers
from orchestrator.app import Core

log = logging.getLogger(__name__)

ANSWER_QUIET_S = 0.02  # a command's work starts once no request has been answered for this long…
ANSWER_DEFER_S = 0.5  # …or this long after it was answered, whichever comes first


@dataclass
class SlackRuntime:
    core: Core
    multi_workspace: bool = False
    pacers: Pacers = field(default_factory=lambda: Pacers(slack_limits()))
    privacy: ChannelPrivacy = field(default_factory=ChannelPrivacy)  # conversations.info, cached
    users: SlackUsers = field(default_factory=SlackUsers)  # users.info (display names, admins), cached
    ack_times: list[float] = field(default_factory=list)  # seconds from receipt to ack, last 100
    tailer: FrontTailer | None = None  # set by build_app (a core with a feed: the durable front)
    # every Web API call's connections, kept alive (without it slack_sdk opens a session, so a TCP and
    # TLS connection, per call); made in build_app, inside the loop, closed at shutdown
    session: aiohttp.ClientSession | None = None
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _answering: int = 0  # HTTP requests being answered (`answering`)
    _quiet: asyncio.Event = field(default_factory=asyncio.Event)  # no request answered for ANSWER_QUIET_S
    _quiet_timer: asyncio.TimerHandle | None = None

    def __post_init__(self) -> None:
        self._quiet.set()

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Around answering one HTTP request: what waits in `after_answers` goes once requests stop coming."""
        self._answering += 1
        self._quiet.clear()
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
            self._quiet_timer = None
        try:
            yield
        finally:
            self._answering -= 1
            if not self._answering:
                self._quiet_timer = asyncio.get_running_loop().call_later(ANSWER_QUIET_S, self._quiet.set)

    async def after_answers(self) -> None:
        """Until no request has been answered for ANSWER_QUIET_S (at most ANSWER_DEFER_S): a burst of
        commands is acked before any of them runs, so none of their work queues in front of an ack."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(ANSWER_DEFER_S):
                await self._quiet.wait()

    @classmethod
    def create(cls, core: Core, limits: Limits | None = None, *, multi_workspace: bool = False) -> SlackRuntime:
        limits = limits or slack_limits(streams=bot_settings(core.settings).slack_native_streams)
        return cls(core=core, multi_workspace=multi_workspace, pacers=Pacers(limits))

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run `coro` after the ack; the set keeps the task referenced until it ends."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("slack task %s failed", task.get_name(), exc_info=task.exception())

    def record_ack(self, seconds: float) -> None:
        self.ack_times.append(seconds)
        del self.ack_times[:-100]

    @property
    def following(self) -> int:
        """Live debates whose threads this process renders."""
        return 0 if self.tailer is None else len(self.tailer.following)

    async def idle(self) -> None:
        """Wait for every background task and every followed debate's thread (tests, shutdown)."""
        while self._tasks or self.following:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
            if self.tailer is not None:
                await self.tailer.idle()

    async def shutdown(self) -> None:
        """Stop: background tasks are cancelled; threads are left to the next start to resume."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self.tailer is not None:
            await self.tailer.aclose()
        if self.session is not None:
            await self.session.close()
