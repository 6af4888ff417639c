"""What a front does with durable debates, without running any: `FrontFeed`, over a `DBOSClient`.

A front never launches DBOS (it executes and recovers no workflow): it enqueues a debate for the workers,
stops one, and reads a debate's events from the workflow's stream, from any offset, so a front that
restarted picks each live debate up again from offset 0. A continuation (`continue` after the verdict)
is a workflow of its own, with its own stream: `enqueue_continuation`, and `events(..., segment=N)`.

A stream entry is one event or a list of them (a step's events written together). A stream is written
at least once (a step that runs again writes again), so the feed drops what it has delivered before: an
event whose key it has seen, a text delta whose (turn, attempt, offset) it has seen. What is left may
still hold a turn restarted by a new attempt: the renderer starts that turn's text over
(`bots.thread.live`). The reads of all the debates a front follows share batches (stream_reads.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from dbos import DBOS, DBOSClient, EnqueueOptions
from pydantic import TypeAdapter, ValidationError

from orchestrator.config import Settings
from orchestrator.durable.config import (
    APP_NAME,
    POLL_S,
    prepare_system_db,
    sqlite_path,
    system_db_url,
    workflow_version,
)
from orchestrator.durable.names import (
    CONTINUATION_WORKFLOW_NAME,
    QUEUE,
    STREAM,
    WORKFLOW_NAME,
    continuation_workflow_id,
    segment_workflow_id,
    workflow_id,
)
from orchestrator.durable.stream_reads import StreamMissing, StreamReads
from orchestrator.events import FINAL_EVENTS, Event, EventBase, TextDelta
from orchestrator.models import DebateSpec

log = logging.getLogger(__name__)

POLL_SECONDS = POLL_S  # how often a stream with nothing new is read again (SQLite has no notifications)
# Postgres: LISTEN/NOTIFY wakes a reader; this read only catches a lost notification (a front reads every
# live debate's stream, so an idle read is paid per debate)
NOTIFIED_POLL_SECONDS = 5.0
_EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def _events_in(value: Any, debate_id: str) -> list[EventBase]:
    """The events of one stream entry: one event, or a list of them (a step's events written together)."""
    events = []
    for item in value if isinstance(value, list) else [value]:
        try:
            events.append(_EVENT.validate_python(item))
        except ValidationError:  # written by another version of the program: skip it, keep reading
            log.warning("debate %s: unreadable stream entry skipped", debate_id, exc_info=True)
    return events


class DebateNotQueued(LookupError):
    """The debate has no workflow: it was never enqueued (or its workflow was deleted)."""


class Seen:
    """What a reader has delivered already, for a stream written at least once."""

    def __init__(self) -> None:
        self._keys: set[str] = set()
        self._deltas: set[tuple[str, str, int]] = set()

    def first(self, event: EventBase) -> bool:
        """True the first time this event comes; False for a repeat."""
        if isinstance(event, TextDelta):
            delta = (event.key, event.attempt, event.offset)
            if delta in self._deltas:
                return False
            self._deltas.add(delta)
            return True
        if event.key in self._keys:
            return False
        self._keys.add(event.key)
        return True


class FrontFeed:
    """Enqueue, stop and follow debates through the DBOS system database. Open with `connect`."""

    def __init__(self, client: DBOSClient, *, application_version: str | None = None,
                 poll_seconds: float = POLL_SECONDS) -> None:
        self.client = client
        self.application_version = application_version
        self.reads = StreamReads(client, STREAM, poll_seconds=poll_seconds)  # every debate's reads, batched

    @classmethod
    async def open(cls, settings: Settings) -> FrontFeed:
        """The feed of this program's workflow database (`system_db_url`), with its name and pinned
        version. A front may start before any worker: the database is created and migrated if need be."""
        url = system_db_url(settings)
        await asyncio.to_thread(prepare_system_db, url)
        await asyncio.to_thread(DBOS.migrate, url)
        poll = POLL_SECONDS if sqlite_path(url) is not None else NOTIFIED_POLL_SECONDS
        return await cls.connect(url, application_name=APP_NAME, application_version=workflow_version(),
                                 poll_seconds=poll)

    @classmethod
    async def connect(cls, system_database_url: str, *, application_name: str,
                      application_version: str | None = None, poll_seconds: float = POLL_SECONDS) -> FrontFeed:
        """A client of the system database at `system_database_url`, which a DBOS launch (or
        `DBOS.migrate`) must have created. `application_version` must be the workers' pinned one: a
        workflow enqueued with another version waits for a worker of that version."""
        # on Postgres a listener thread turns the workers' NOTIFYs into wake-ups: a stream entry reaches
        # the front at once rather than after half a poll interval
        client = await asyncio.to_thread(DBOSClient, system_database_url=system_database_url,
                                         application_name=application_name,
                                         use_listen_notify=sqlite_path(system_database_url) is None)
        return cls(client, application_version=application_version, poll_seconds=poll_seconds)

    async def close(self) -> None:
        await asyncio.to_thread(self.client.destroy)

    async def enqueue(self, spec: DebateSpec, request_key: str | None = None) -> str:
        """Queue the debate for a worker; returns the id of the debate now running for this request.

        With a `request_key` (a platform's request id), a repeat of the request while its debate is
        queued or running starts nothing and returns that debate's id (not `spec.id`). The workflow id
        comes from the debate's id, so enqueueing the same debate twice also runs it once."""
        options: EnqueueOptions = {"workflow_name": WORKFLOW_NAME, "queue_name": QUEUE,
                                   "workflow_id": workflow_id(spec.id)}
        if self.application_version is not None:
            options["app_version"] = self.application_version
        if request_key is not None:
            options["deduplication_id"] = request_key
            options["duplication_policy"] = "return-existing"
        handle = await self.client.enqueue_async(options, spec.model_dump_json())
        return handle.get_workflow_id().removeprefix(workflow_id(""))

    async def enqueue_continuation(self, debate_id: str, segment: int, request_key: str | None = None) -> int:
        """Queue segment `segment` (2, 3, …) of a debate whose continuation the log has begun; returns
        the segment now running for this request. The workflow id comes from the debate and the segment,
        so a segment runs once; a `request_key` repeated while its continuation runs starts nothing."""
        options: EnqueueOptions = {"workflow_name": CONTINUATION_WORKFLOW_NAME, "queue_name": QUEUE,
                                   "workflow_id": continuation_workflow_id(debate_id, segment)}
        if self.application_version is not None:
            options["app_version"] = self.application_version
        if request_key is not None:
            options["deduplication_id"] = request_key
            options["duplication_policy"] = "return-existing"
        handle = await self.client.enqueue_async(options, debate_id, segment)
        running = handle.get_workflow_id().rpartition("-c")[2]
        return int(running) if running.isdigit() else segment

    async def cancel(self, debate_id: str, segment: int = 1) -> str | None:
        """Stop the workflow of the debate's `segment` (1: the debate; 2, …: a continuation): it ends at its
        next step boundary, and no model call starts after this returns. Returns DBOS's status of the
        workflow once the cancel is in: CANCELLED when the stop reached it, SUCCESS or ERROR when it had
        ended first (its own end stands), None when there is no such workflow. Writing the outcome and
        telling the thread is the caller's."""
        workflow = segment_workflow_id(debate_id, segment)
        await self.client.cancel_workflow_async(workflow)
        found = await self.client.list_workflows_async(workflow_ids=[workflow], load_input=False,
                                                       load_output=False)
        return found[0].status if found else None

    async def events(self, debate_id: str, offset: int = 0, segment: int = 1) -> AsyncIterator[EventBase]:
        """The events of the debate's `segment` (1: the debate; 2, …: a continuation, on its own stream)
        from stream position `offset`, each delivered once, until its final event, or until the stream
        closes or the workflow ends (then the caller decides what the thread shows). Raises
        DebateNotQueued when that segment has no workflow."""
        seen = Seen()
        stream = self.reads.values(segment_workflow_id(debate_id, segment), offset)
        try:
            async for value in stream:
                for event in _events_in(value, debate_id):
                    if not seen.first(event):
                        continue
                    yield event
                    if isinstance(event, FINAL_EVENTS):
                        return
        except StreamMissing:
            raise DebateNotQueued(debate_id) from None
        finally:
            await stream.aclose()
