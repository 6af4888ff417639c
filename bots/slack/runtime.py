"""What the Slack listeners share: the core, per-workspace pacers, background tasks, and the tailer
that renders every live Slack debate's thread from the workers' event streams."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore

from bots.settings import bot_settings
from bots.slack.scope import ChannelPrivacy, SlackUsers
from bots.slack.surface import slack_limits
from bots.thread import FrontTailer, Limits, Pacers
from orchestrator.app import Core

log = logging.getLogger(__name__)


@dataclass
class SlackRuntime:
    core: Core
    multi_workspace: bool = False
    pacers: Pacers = field(default_factory=lambda: Pacers(slack_limits()))
    privacy: ChannelPrivacy = field(default_factory=ChannelPrivacy)  # conversations.info, cached
    users: SlackUsers = field(default_factory=SlackUsers)  # users.info (display names, admins), cached
    ack_times: list[float] = field(default_factory=list)  # seconds from receipt to ack, last 100
    tailer: FrontTailer | None = None  # set by build_app (a core with a feed: the durable front)
    installations: AsyncInstallationStore | None = None  # a multi-workspace install's store (set by build_app)
    # every Web API call's connections, kept alive (without it slack_sdk opens a session, so a TCP and
    # TLS connection, per call); made in build_app, inside the loop, closed at shutdown
    session: aiohttp.ClientSession | None = None
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _orgs: set[tuple[str, str]] = field(default_factory=set)  # (workspace, org) remembered in the log
    @classmethod
    def create(cls, core: Core, limits: Limits | None = None, *, multi_workspace: bool = False) -> SlackRuntime:
        limits = limits or slack_limits(streams=bot_settings(core.settings).slack_native_streams)
        return cls(core=core, multi_workspace=multi_workspace, pacers=Pacers(limits))

    async def note_org(self, team: str | None, org: str | None) -> None:
        """A workspace of an Enterprise Grid org, the first time this process sees it: remembered in the log,
        so an org-wide install reaches its threads and the org's uninstall purges it (one write per workspace
        and process; a failure is tried again at the next request)."""
        if not self.multi_workspace or team is None or org is None or (team, org) in self._orgs:
            return
        try:
            await self.core.note_org("slack", team, org)
            self._orgs.add((team, org))
        except Exception:
            log.warning("slack: could not remember the org of workspace %s", team, exc_info=True)

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
