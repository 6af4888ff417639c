"""`FrontFeed` against real DBOS: a tiny workflow writes a debate's events to its stream in an SQLite
system database, the feed reads them through a `DBOSClient` as a front would (no launch of its own).

DBOS is a process-wide singleton: each test launches it in its own loop and destroys it (keeping the
registry: the workflow below registers once, at import). The last test is a whole front restart: a
`FrontTailer` renders the stream into a Slack thread on the peer, goes down mid-debate, and a new one
resumes from the log and the stream's start.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack.surface import SlackThread
from bots.thread import ROOT, Pacer, ThreadSink
from bots.thread.tail import FrontTailer
from orchestrator.config import load_settings
from orchestrator.durable import workflow_version
from orchestrator.durable.config import _sqlalchemy_url
from orchestrator.durable.feed import DebateNotQueued, FrontFeed
from orchestrator.durable.names import STREAM, workflow_id
from orchestrator.events import EventBase, Notice
from orchestrator.log import DebateRecord, Store
from tests.dbos_launched import config_for, launched, sqlite_url
from tests.fakes.slack_api import SlackAPIPeer
from tests.thread_resume_harness import (
    CHANNEL,
    FAST_SLACK,
    assert_slack_thread_once,
    at_least_once,
    debate_events,
    spec_for,
)

APP = "debate-bot-feed-test"
GO = "go"


@DBOS.workflow(name="feed_test_scripted")
async def scripted(entries: list[dict[str, Any]], pause_at: int) -> None:
    """Write `entries` to the stream, waiting for a GO message before entry `pause_at`."""
    for index, entry in enumerate(entries):
        if index == pause_at:
            await DBOS.recv_async(GO, timeout_seconds=60)
        await DBOS.write_stream_async(STREAM, entry)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def system_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """SQLite (DBOS's poller tells a front's reads what was written), or Postgres (LISTEN/NOTIFY does)."""
    if request.param == "sqlite":
        url = sqlite_url(tmp_path)
    else:
        url = _sqlalchemy_url(request.getfixturevalue("postgres_url"))
    async with launched(config_for(APP, url, "feed-test", notification_listener_polling_interval_sec=0.05)):
        yield url


@pytest.fixture
async def feed(system_db: str) -> AsyncIterator[FrontFeed]:
    front = await FrontFeed.connect(system_db, application_name=APP, poll_seconds=0.02)
    try:
        yield front
    finally:
        await front.close()


def dumped(events: list[EventBase]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in events]


async def start(debate_id: str, entries: list[dict[str, Any]], pause_at: int = -1) -> None:
    with SetWorkflowID(workflow_id(debate_id)):
        await DBOS.start_workflow_async(scripted, entries, pause_at)


@pytest.mark.slow
async def test_the_feed_delivers_each_event_once_live_and_from_any_offset(feed: FrontFeed) -> None:
    spec = spec_for("slack")
    events = debate_events(spec)
    late = Notice(debate_id=spec.id, text="written after the final event")
    entries = dumped(at_least_once(events)) + dumped([late])
    await start(spec.id, entries, pause_at=len(entries) // 2)

    got: list[EventBase] = []
    reading = asyncio.Event()

    async def read() -> None:
        async for event in feed.events(spec.id):
            got.append(event)
            reading.set()

    reader = asyncio.create_task(read())
    await reading.wait()  # the stream is only half written: the reader waits for the rest
    await DBOS.send_async(workflow_id(spec.id), "now", topic=GO)
    await asyncio.wait_for(reader, 20)
    assert got == events  # repeats dropped (deltas by attempt and offset), nothing after the final event

    again = [e async for e in feed.events(spec.id)]
    assert again == events  # a restarted front reads the same from offset 0
    tail = [e async for e in feed.events(spec.id, offset=len(entries) - 3)]
    assert tail == events[-2:]


@pytest.mark.slow
async def test_the_feed_ends_with_a_workflow_that_wrote_no_final_event(feed: FrontFeed) -> None:
    spec = spec_for("slack")
    events = debate_events(spec)[:4]
    await start(spec.id, dumped(events + events))
    assert [e async for e in feed.events(spec.id)] == events
    with pytest.raises(DebateNotQueued):
        [e async for e in feed.events("never-enqueued")]


@pytest.mark.slow
async def test_an_enqueue_repeated_with_its_request_key_starts_nothing_and_cancel_stops_it(feed: FrontFeed) -> None:
    first, retry = spec_for("slack"), spec_for("slack")
    assert await feed.enqueue(first, "trigger-1") == first.id
    assert await feed.enqueue(retry, "trigger-1") == first.id  # a retried request: the debate it started
    assert await feed.enqueue(first) == first.id  # the same debate again: one workflow
    assert await feed.enqueue(retry, "trigger-2") == retry.id

    async def status(debate_id: str) -> Any:
        return await (await feed.client.retrieve_workflow_async(workflow_id(debate_id))).get_status()

    queued = await status(retry.id)  # no worker here: it waits on the queue for one
    assert (queued.status, queued.name, queued.queue_name) == ("ENQUEUED", "debate_workflow", "debates")
    await feed.cancel(first.id)
    assert (await status(first.id)).status == "CANCELLED"


async def test_a_front_started_before_any_worker_creates_the_workflow_database(tmp_path: Path) -> None:
    settings = load_settings(DEBATE_DB=str(tmp_path / "debates.db"))
    feed = await FrontFeed.open(settings)  # nothing has launched DBOS on this file
    try:
        spec = spec_for("slack")
        assert await feed.enqueue(spec, "trigger-1") == spec.id
        status = await (await feed.client.retrieve_workflow_async(workflow_id(spec.id))).get_status()
        assert (status.status, status.app_version) == ("ENQUEUED", workflow_version())
    finally:
        await feed.close()
    assert (tmp_path / "debates.db.workflows.sqlite").stat().st_mode & 0o777 == 0o600


@pytest.mark.slow
async def test_a_front_restarted_mid_debate_resumes_its_thread_from_the_stream(
    feed: FrontFeed, tmp_path: Path
) -> None:
    spec = spec_for("slack")
    events = debate_events(spec)
    entries = dumped(at_least_once(events))
    async with SlackAPIPeer() as peer, Store(tmp_path / "log.db") as store:
        await store.create_debate(spec)
        client = AsyncWebClient(token="xoxb-test", base_url=peer.base_url)
        root_ts = str((await client.chat_postMessage(channel=CHANNEL, text=spec.topic))["ts"])

        async def reach(record: DebateRecord) -> tuple[SlackThread, Pacer]:
            assert record.channel is not None
            return SlackThread(client, record.channel, root_ts), Pacer(FAST_SLACK)

        await start(spec.id, entries, pause_at=len(entries) // 2)
        front = FrontTailer(feed, store, "slack", reach)
        front.follow(spec.id, await ThreadSink.open(SlackThread(client, CHANNEL, root_ts), Pacer(FAST_SLACK), store,
                                                     spec, root_ts))
        await peer.wait_for(lambda p: len(p.thread(CHANNEL, root_ts)) >= 2)  # the thread has begun
        await front.aclose()  # the front goes down mid-debate

        restarted = FrontTailer(feed, store, "slack", reach)
        assert await restarted.resume() == [spec.id]
        await DBOS.send_async(workflow_id(spec.id), "now", topic=GO)
        final = events[-1]
        await store.finish_debate(spec.id, final.outcome)  # type: ignore[attr-defined]  # the workers' log write
        await asyncio.wait_for(restarted.idle(), 20)
        await assert_slack_thread_once(peer, store, spec, root_ts)
        assert (await store.messages(spec.id))[ROOT].final


@pytest.mark.slow
async def test_one_feed_follows_many_debates_at_once_each_in_order_with_shared_reads(feed: FrontFeed,
                                                                                     system_db: str) -> None:
    if not system_db.startswith("sqlite"):
        pytest.skip("SQLite's scans and sweeps; on Postgres the notifications drive the reads (the next test)")
    specs = [spec_for("slack") for _ in range(30)]
    expected = {spec.id: debate_events(spec) for spec in specs}
    for spec in specs:
        entries = dumped(at_least_once(expected[spec.id]))
        await start(spec.id, entries, pause_at=len(entries) // 2)

    batches: list[int] = []
    calls: list[str] = []  # "scan" or "read", in order
    idle_passes = asyncio.Event()
    read_many, changed_since = feed.reads._streams.read_many, feed.reads._streams.changed_since

    def recorded(key: str, offsets: dict[str, int], limit: int) -> Any:
        batches.append(len(offsets))
        calls.append(f"read {len(offsets)}")
        if len(batches) > 3 and batches[-3:] == [len(specs)] * 3:
            idle_passes.set()
        return read_many(key, offsets, limit)

    def scanned(key: str, since: int | None) -> Any:
        calls.append("scan")
        return changed_since(key, since)

    feed.reads._streams.read_many = recorded  # type: ignore[method-assign]
    feed.reads._streams.changed_since = scanned  # type: ignore[method-assign]
    got: dict[str, list[EventBase]] = {spec.id: [] for spec in specs}
    halfway = {spec.id: asyncio.Event() for spec in specs}

    async def follow(debate_id: str) -> None:
        async for event in feed.events(debate_id):
            got[debate_id].append(event)
            halfway[debate_id].set()

    readers = [asyncio.create_task(follow(spec.id)) for spec in specs]
    for spec in specs:
        await halfway[spec.id].wait()
    # every workflow is paused: the scans find no write, and every QUIET_POLLS polls one pass reads all 30
    # idle streams in one query (their workflows may have ended), and wakes none of them
    paused = len(calls)
    await asyncio.wait_for(idle_passes.wait(), 30)
    idle = "".join(call[0] for call in calls[calls.index(f"read {len(specs)}", paused):])  # from a first sweep
    assert idle.count("r") >= 3 and "rr" not in idle  # each pass after a scan; scans find no write to read
    delivered = {debate_id: len(events) for debate_id, events in got.items()}
    for spec in specs:
        await DBOS.send_async(workflow_id(spec.id), "now", topic=GO)
    await asyncio.wait_for(asyncio.gather(*readers), 120)

    assert got == expected
    assert all(0 < delivered[spec.id] < len(expected[spec.id]) for spec in specs)
    assert feed.reads.passes == len(batches) < sum(batches)  # one query per pass, for many streams


@pytest.mark.slow
async def test_on_postgres_the_reads_follow_the_writes_and_no_clock(system_db: str) -> None:
    """Postgres: each write's NOTIFY hands its stream's reader to the front's loop, and a pass reads the
    streams handed over since the last; while nothing is written, no pass runs at all."""
    if system_db.startswith("sqlite"):
        pytest.skip("Postgres' LISTEN/NOTIFY; SQLite scans for writes (the test above)")
    feed = await FrontFeed.connect(system_db, application_name=APP, poll_seconds=60.0)
    try:
        specs = [spec_for("slack") for _ in range(20)]
        expected = {spec.id: debate_events(spec) for spec in specs}
        paused_at: dict[str, int] = {}  # the entries each workflow writes before it pauses
        for spec in specs:
            entries = dumped(at_least_once(expected[spec.id]))
            paused_at[workflow_id(spec.id)] = len(entries) // 2
            await start(spec.id, entries, pause_at=len(entries) // 2)
        batches: list[int] = []
        read_up_to: dict[str, int] = {}
        caught_up = asyncio.Event()
        read_many = feed.reads._streams.read_many

        def recorded(key: str, offsets: dict[str, int], limit: int) -> Any:
            batches.append(len(offsets))
            chunks = read_many(key, offsets, limit)
            for wf, chunk in chunks.items():
                read_up_to[wf] = max(read_up_to.get(wf, 0), offsets[wf] + len(chunk.values))
            if all(read_up_to.get(wf, 0) >= at for wf, at in paused_at.items()):
                loop.call_soon_threadsafe(caught_up.set)  # this runs in a thread (asyncio.to_thread)
            return chunks

        loop = asyncio.get_running_loop()
        feed.reads._streams.read_many = recorded  # type: ignore[method-assign]
        got: dict[str, list[EventBase]] = {spec.id: [] for spec in specs}

        async def follow(debate_id: str) -> None:
            async for event in feed.events(debate_id):
                got[debate_id].append(event)

        readers = [asyncio.create_task(follow(spec.id)) for spec in specs]
        await asyncio.wait_for(caught_up.wait(), 60)  # every entry written before the pauses is read
        passes, looks = feed.reads.passes, []
        due = feed.reads._due
        feed.reads._due = lambda *args: looks.append(args) or due(*args)  # type: ignore[method-assign]
        await asyncio.sleep(1.2)  # past a look for streams unread too long (every second): none is, at 60 s
        feed.reads._due = due  # type: ignore[method-assign]
        # nothing is written while every workflow waits: at most a pass for a notification that came after its
        # write was read (DBOS's notifier sends a batch of them at once), and no look at the readers every few
        # ms (polled, that was 24 looks and passes whenever a flag was up)
        assert feed.reads.passes - passes <= 1
        assert len(looks) <= 8  # a look a second, and a few around that one pass
        for spec in specs:
            await DBOS.send_async(workflow_id(spec.id), "now", topic=GO)
        await asyncio.wait_for(asyncio.gather(*readers), 120)
        assert got == expected
        assert feed.reads.passes == len(batches) < sum(batches)  # passes read the streams written together
    finally:
        await feed.close()
