"""The contract of orchestrator/durable/dbos_private.py, the one module using DBOS's private API: each call
against the installed DBOS (the version pyproject pins) and a real SQLite system database, where a tiny
workflow writes a stream, waits for a message, writes more and closes it. A DBOS upgrade runs this first."""

from __future__ import annotations

import asyncio
import re
import time
import tomllib
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dbos import DBOS, DBOSClient, SetWorkflowID
from dbos._dbos import _get_dbos_instance
from psycopg_pool import PoolClosed

from orchestrator.durable.config import _sqlalchemy_url
from orchestrator.durable.dbos_private import PINNED_MINOR, StreamChunk, SystemStreams, hear_no_streams, is_active
from tests.dbos_launched import config_for, launched, sqlite_url

APP = "debate-bot-private-test"
KEY = "contract"
GO = "go"
ROOT = Path(__file__).parent.parent


@DBOS.workflow(name="dbos_private_contract")
async def writer(first: list[Any], then: list[Any]) -> None:
    """Write `first`, wait for GO, write `then`, close the stream."""
    for value in first:
        await DBOS.write_stream_async(KEY, value)
    await DBOS.recv_async(GO, timeout_seconds=60)
    for value in then:
        await DBOS.write_stream_async(KEY, value)
    await DBOS.close_stream_async(KEY)


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[DBOSClient]:
    """DBOS launched on a fresh SQLite file, and a client of it that polls for stream writes."""
    url = sqlite_url(tmp_path)
    async with launched(config_for(APP, url, "private-test", notification_listener_polling_interval_sec=0.05)):
        front = await asyncio.to_thread(DBOSClient, system_database_url=url, application_name=APP,
                                        use_listen_notify=True)
        try:
            yield front
        finally:
            await asyncio.to_thread(front.destroy)


def test_the_installed_dbos_is_the_minor_version_pinned_and_checked() -> None:
    pin = next(d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
               if re.match(r"dbos\b", d))
    major, minor = PINNED_MINOR.split(".")
    assert pin.replace(" ", "") == f"dbos>={major}.{minor},<{major}.{int(minor) + 1}"
    assert version("dbos").startswith(f"{PINNED_MINOR}.")


@pytest.mark.slow
async def test_each_private_call_reads_listens_and_deserialises_as_stream_reads_expects(client: DBOSClient) -> None:
    streams = SystemStreams(client)
    assert (await asyncio.to_thread(streams.read, "no-such-workflow", KEY, 0, 10)).status is None

    first = [{"type": "notice", "text": "one"}, {"n": 2, "nested": [1.5, None, "ü"]}]
    with SetWorkflowID("contract-1"):
        handle = await DBOS.start_workflow_async(writer, first, ["three"])
    with streams.listening("contract-1", KEY) as listener:
        # the listener is set once the stream has a value (DBOS's poller on SQLite, NOTIFY on Postgres)
        assert await listener.wait(30.0)
        chunk = await asyncio.to_thread(streams.read, "contract-1", KEY, 0, 10)
        while chunk.status == "ENQUEUED" or len(chunk.values) < 2:  # the first values are written already
            listener.clear()
            await listener.wait(30.0)
            chunk = await asyncio.to_thread(streams.read, "contract-1", KEY, 0, 10)
        assert (chunk.status, chunk.values, chunk.closed) == ("PENDING", first, False)
        assert is_active(chunk.status)
        limited = await asyncio.to_thread(streams.read, "contract-1", KEY, 1, 1)
        assert (limited.values, limited.closed) == ([first[1]], False)
        assert (await asyncio.to_thread(streams.read, "contract-1", KEY, 2, 10)).values == []

        listener.clear()
        # a call-back once the listener is set: not before a write, once after it, and one taken back never
        called: list[str] = []
        taken_back = listener.call_once_set(lambda: called.append("taken back"))
        taken_back()
        set_once = asyncio.Event()
        listener.call_once_set(lambda: (called.append("written"), set_once.set()))
        assert called == []
        await client.send_async("contract-1", "now", topic=GO)
        await handle.get_result(polling_interval_sec=0.05)
        assert await listener.wait(30.0)
        await asyncio.wait_for(set_once.wait(), 30.0)
        listener.call_once_set(lambda: called.append("set already"))  # set now: called soon, on this loop
        await asyncio.sleep(0)
        assert called == ["written", "set already"]
    rest = await asyncio.to_thread(streams.read, "contract-1", KEY, 2, 10)
    assert (rest.status, rest.values, rest.closed) == ("SUCCESS", ["three"], True)  # the close marker is no value
    assert not is_active(rest.status)
    assert (await asyncio.to_thread(streams.read, "contract-1", KEY, 0, 2)).closed is False  # stops at the limit

    # many streams in one statement: each from its own offset, the same chunks as one read each
    with SetWorkflowID("contract-2"):
        other = await DBOS.start_workflow_async(writer, ["a"], [])
    await client.send_async("contract-2", "now", topic=GO)
    await other.get_result(polling_interval_sec=0.05)
    offsets = {"contract-1": 1, "contract-2": 0, "no-such-workflow": 0}
    many = await asyncio.to_thread(streams.read_many, KEY, offsets, 10)
    assert {wf: (c.status, c.values, c.closed) for wf, c in many.items()} == {
        "contract-1": ("SUCCESS", [first[1], "three"], True), "contract-2": ("SUCCESS", ["a"], True),
        "no-such-workflow": (None, [], False)}
    limited_many = await asyncio.to_thread(streams.read_many, KEY, {"contract-1": 0}, 2)
    assert (limited_many["contract-1"].values, limited_many["contract-1"].closed) == (first, False)


@pytest.mark.slow
@pytest.mark.postgres
async def test_read_many_from_the_loop_finds_what_read_many_finds(postgres_url: str) -> None:
    url = _sqlalchemy_url(postgres_url)
    async with launched(config_for(APP, url, "private-test-pg")):
        front = await asyncio.to_thread(DBOSClient, system_database_url=url, application_name=APP)
        streams = SystemStreams(front)
        try:
            for workflow_id, first, then in (("loop-1", ["a", {"b": [1, None]}], ["c"]), ("loop-2", ["d"], [])):
                with SetWorkflowID(workflow_id):
                    handle = await DBOS.start_workflow_async(writer, first, then)
                await front.send_async(workflow_id, "now", topic=GO)
                await handle.get_result(polling_interval_sec=0.05)
            for offsets, limit in (({"loop-1": 0, "loop-2": 0, "no-such-workflow": 0}, 10), ({"loop-1": 1}, 1),
                                   ({"loop-1": 3, "loop-2": 1}, 10), ({}, 10)):
                threaded = await asyncio.to_thread(streams.read_many, KEY, offsets, limit)
                looped = await streams.read_many_on_loop(KEY, offsets, limit)
                assert looped == threaded
            assert looped == {}
            assert (await streams.read_many_on_loop(KEY, {"loop-1": 0}, 10))["loop-1"] == StreamChunk(
                "SUCCESS", ["a", {"b": [1, None]}, "c"], True)
            # each wanted stream is its own lookup (a nested loop into a LIMIT), never a hash of every row
            # of the key, whatever the planner guesses of the JSON's rows or the table's size
            prepared = streams._many_prepared[KEY]
            async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
                plan = "\n".join(row[0] for row in await (await conn.execute(
                    "explain " + prepared.sql, prepared.params({"want": '[{"wf": "loop-1", "off": 0}]',
                                                               "limit": 10}))).fetchall())
            assert "Nested Loop Left Join" in plan and "Limit" in plan and "Hash" not in plan, plan
            await streams.close_on_loop()  # the front stopping: a pass after it fails, and opens nothing again
            with pytest.raises(PoolClosed):
                await streams.read_many_on_loop(KEY, {"loop-1": 0}, 10)
            assert streams._loop_statements is not None and not streams._loop_statements._pools
        finally:
            await streams.close_on_loop()
            await asyncio.to_thread(front.destroy)


@pytest.mark.slow
async def test_changed_since_names_the_streams_written_after_a_rowid_and_the_highest(client: DBOSClient) -> None:
    streams = SystemStreams(client)
    assert await asyncio.to_thread(streams.changed_since, KEY, None) == ({}, -1)  # no stream row yet
    with SetWorkflowID("changed-1"):
        one = await DBOS.start_workflow_async(writer, ["a", "b"], [])
    await client.send_async("changed-1", "now", topic=GO)
    await one.get_result(polling_interval_sec=0.05)
    changed, high = await asyncio.to_thread(streams.changed_since, KEY, -1)
    assert list(changed) == ["changed-1"] and changed["changed-1"] == high  # its close marker is the last row
    assert await asyncio.to_thread(streams.changed_since, KEY, None) == ({}, high)  # None: the highest only
    assert await asyncio.to_thread(streams.changed_since, KEY, high) == ({}, high)

    with SetWorkflowID("changed-2"):
        two = await DBOS.start_workflow_async(writer, ["c"], [])
    await client.send_async("changed-2", "now", topic=GO)
    await two.get_result(polling_interval_sec=0.05)
    later, top = await asyncio.to_thread(streams.changed_since, KEY, high)
    assert list(later) == ["changed-2"] and later["changed-2"] == top > high
    assert await asyncio.to_thread(streams.changed_since, "another-key", high) == ({}, top)


def test_no_other_module_reaches_into_dbos_private_api() -> None:
    private = re.compile(r"\bdbos\._|from dbos\._|\._sys_db\b|\bDBOS\._[a-z]")
    users = sorted(str(path.relative_to(ROOT)) for folder in ("orchestrator", "bots")
                   for path in (ROOT / folder).rglob("*.py") if private.search(path.read_text()))
    assert users == ["orchestrator/durable/dbos_loop_sqlite.py", "orchestrator/durable/dbos_loop_statements.py",
                     "orchestrator/durable/dbos_private.py", "orchestrator/durable/dbos_queue_poll.py",
                     "orchestrator/durable/dbos_step_hops.py",
                     "orchestrator/durable/dbos_step_records.py", "orchestrator/durable/dbos_steps_on_loop.py",
                     "orchestrator/durable/dbos_stream_writes.py"]


@pytest.mark.slow
@pytest.mark.postgres
async def test_a_process_that_hears_no_streams_is_sent_none_and_still_hears_its_messages(postgres_url: str) -> None:
    """A `debate worker` reads no stream: its listener does not LISTEN on the streams channel, so a write's
    NOTIFY reaches the front's listener and not the worker's; DBOS's messages (`send`/`recv`) still reach it."""
    url = _sqlalchemy_url(postgres_url)
    restore = hear_no_streams()
    try:
        async with launched(config_for(APP, url, "private-test-deaf")):
            worker_db = _get_dbos_instance()._sys_db
            await asyncio.to_thread(_listening, worker_db)
            restore()  # the front (a process of its own in the product; here, this one) hears the streams
            front = await asyncio.to_thread(DBOSClient, system_database_url=url, application_name=APP,
                                            use_listen_notify=True)
            worker_heard, payload = worker_db.register_stream_listener("deaf-1", KEY)
            try:
                with SystemStreams(front).listening("deaf-1", KEY) as front_heard:
                    with SetWorkflowID("deaf-1"):
                        handle = await DBOS.start_workflow_async(writer, ["a"], ["b"])
                    assert await front_heard.wait(30.0)
                    front_heard.clear()
                    await front.send_async("deaf-1", "now", topic=GO)  # the worker hears its message: it goes on
                    await handle.get_result(polling_interval_sec=0.05)
                    assert await front_heard.wait(30.0)
                    await asyncio.sleep(0.3)  # as long again for a notification to the worker, were it listening
                assert not worker_heard.is_set()
            finally:
                worker_db.unregister_stream_listener(payload, worker_heard)
                await asyncio.to_thread(front.destroy)
    finally:
        restore()


def _listening(sys_db: Any, timeout_s: float = 30.0) -> None:
    """Until `sys_db`'s listener thread has connected and sent its LISTENs (under its lock, as DBOS does)."""
    deadline = time.monotonic() + timeout_s
    while getattr(sys_db, "notification_conn", None) is None:
        assert time.monotonic() < deadline, "the notification listener never connected"
        time.sleep(0.01)
    with sys_db._listener_thread_lock:
        pass
