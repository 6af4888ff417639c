"""The contract of orchestrator/durable/dbos_private.py, the one module using DBOS's private API (read-only):
each call against the installed DBOS and a real SQLite (and Postgres) system database, where a tiny workflow
writes a stream, waits for a message, writes more and closes it. A DBOS upgrade runs this first. And the
list of DBOS internals in orchestrator/durable/__init__.py's docstring is checked against the code."""

from __future__ import annotations

import ast
import asyncio
import re
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, DBOSClient, SetWorkflowID

import orchestrator.durable
from orchestrator.durable.config import _sqlalchemy_url
from orchestrator.durable.dbos_private import StreamChunk, SystemStreams, is_active
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


def test_dbos_is_pinned_to_its_major_version() -> None:
    pin = next(d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
               if re.match(r"dbos\b", d))
    assert pin.replace(" ", "") == "dbos>=3.4,<4"


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
async def test_read_many_on_postgres_reads_each_stream_from_its_offset(postgres_url: str) -> None:
    url = _sqlalchemy_url(postgres_url)
    async with launched(config_for(APP, url, "private-test-pg")):
        front = await asyncio.to_thread(DBOSClient, system_database_url=url, application_name=APP)
        streams = SystemStreams(front)
        assert streams.notified
        try:
            for workflow_id, first, then in (("pg-1", ["a", {"b": [1, None]}], ["c"]), ("pg-2", ["d"], [])):
                with SetWorkflowID(workflow_id):
                    handle = await DBOS.start_workflow_async(writer, first, then)
                await front.send_async(workflow_id, "now", topic=GO)
                await handle.get_result(polling_interval_sec=0.05)
            many = await asyncio.to_thread(streams.read_many, KEY, {"pg-1": 1, "pg-2": 0, "no-such-workflow": 0}, 10)
            assert many == {"pg-1": StreamChunk("SUCCESS", [{"b": [1, None]}, "c"], True),
                            "pg-2": StreamChunk("SUCCESS", ["d"], True), "no-such-workflow": StreamChunk(None)}
            limited = await asyncio.to_thread(streams.read_many, KEY, {"pg-1": 0}, 2)
            assert limited["pg-1"] == StreamChunk("SUCCESS", ["a", {"b": [1, None]}], False)
            assert await asyncio.to_thread(streams.read_many, KEY, {}, 10) == {}
        finally:
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


def _private_uses(path: Path) -> tuple[set[str], set[str]]:
    """The DBOS internals a module imports (`module.name`, under `dbos.`) and the private attributes it reads
    of objects not its own (anything but `self` or `cls`)."""
    imports, attributes = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dbos._"):
            imports |= {f"{node.module.removeprefix('dbos.')}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            imports |= {alias.name for alias in node.names if alias.name.startswith("dbos._")}
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
              and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            attributes.add(node.attr)
    return imports, attributes


def test_the_package_docstring_names_every_dbos_internal_the_code_uses() -> None:
    doc = orchestrator.durable.__doc__ or ""
    listed = re.search(r"private imports:(.*?)private attributes:(.*?)(?:\n\n|\Z)", doc, re.S)
    assert listed, "orchestrator/durable/__init__.py must list the DBOS internals it uses"
    said_imports = {name.strip() for name in listed.group(1).split(",")}
    said_attributes = {name.strip().split()[-1] for name in listed.group(2).split(",")}

    private = re.compile(r"\bdbos\._|from dbos\._|\._sys_db\b|\bDBOS\._[a-z]")
    users = sorted(str(path.relative_to(ROOT)) for folder in ("orchestrator", "bots")
                   for path in (ROOT / folder).rglob("*.py") if private.search(path.read_text()))
    assert users == ["orchestrator/durable/dbos_private.py"]
    imports, attributes = _private_uses(ROOT / users[0])
    assert imports == said_imports
    assert attributes == said_attributes
