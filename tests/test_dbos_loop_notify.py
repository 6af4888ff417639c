"""A stream write's wake-up on Postgres (orchestrator/durable/dbos_loop_notify.py): the NOTIFY that DBOS's
notifier thread would send is sent from the loop, coalesced, and a LISTENing connection hears it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest
from dbos._sys_db import SystemDatabase, _dbos_streams_channel

from orchestrator.durable.dbos_loop_statements import conninfo
from orchestrator.durable.dbos_stream_writes import StreamWrite, StreamWriter
from tests.test_dbos_autocommit import add_workflow, sys_db  # noqa: F401 (the fixture)

pytestmark = pytest.mark.postgres

ROW = ("v", "py_pickle")
HEAR_S = 30.0


@pytest.fixture
async def listening(sys_db: SystemDatabase) -> AsyncIterator[psycopg.AsyncConnection]:  # noqa: F811
    async with await psycopg.AsyncConnection.connect(conninfo(sys_db), autocommit=True) as conn:
        await conn.execute(f'LISTEN "{_dbos_streams_channel}"')
        yield conn


async def heard(conn: psycopg.AsyncConnection, count: int) -> list[str]:
    """The payloads of the next `count` notifications on the connection (more if they came in one packet;
    fewer after HEAR_S). The generator runs to its end, so it gives the connection's lock back."""
    return [note.payload async for note in conn.notifies(timeout=HEAR_S, stop_after=count)]


async def test_writes_in_one_interval_wake_their_readers_with_one_notify(
        sys_db: SystemDatabase, listening: psycopg.AsyncConnection) -> None:  # noqa: F811
    for workflow in ("a", "b"):
        add_workflow(sys_db, workflow, "me")
    writer = StreamWriter(sys_db)
    assert writer.notifier is not None
    writer.notifier.coalesce_s = 60.0  # nothing is sent before close: the writes share one flush
    try:
        for workflow in ("a", "b", "a", "a"):
            await writer.alone(StreamWrite(workflow, 2, "me", "s", [ROW]))
        assert writer.notifier.sent == 0
        assert sys_db._pending_notifications == {}  # DBOS's notifier thread has nothing to send
        await writer.notifier.close()
        assert writer.notifier.sent == 1
        assert sorted(await heard(listening, 2)) == ["a::s", "b::s"]  # one wake-up per stream written
    finally:
        assert writer.loop_statements is not None
        await writer.loop_statements.close()


async def test_a_write_is_heard_within_the_interval(
        sys_db: SystemDatabase, listening: psycopg.AsyncConnection) -> None:  # noqa: F811
    add_workflow(sys_db, "w", "me")
    writer = StreamWriter(sys_db)
    assert writer.notifier is not None
    try:
        await writer.alone(StreamWrite("w", 2, "me", "s", [ROW]))
        assert await heard(listening, 1) == ["w::s"]  # the timer sent it, nothing closed
        await writer.alone(StreamWrite("w", 2, "me", "s", [ROW]))
        assert await heard(listening, 1) == ["w::s"]  # and again for a later write
        await writer.notifier.close()  # its flushes done (a listener may hear one before its sender is told)
        assert writer.notifier.sent == 2
    finally:
        await writer.notifier.close()
        assert writer.loop_statements is not None
        await writer.loop_statements.close()


async def test_nothing_is_sent_once_the_connections_closed(sys_db: SystemDatabase) -> None:  # noqa: F811
    add_workflow(sys_db, "w", "me")
    writer = StreamWriter(sys_db)
    assert writer.notifier is not None and writer.loop_statements is not None
    writer.notifier.coalesce_s = 0.0
    await writer.alone(StreamWrite("w", 2, "me", "s", [ROW]))
    await writer.loop_statements.close()  # before the flush ran: it must not open them again
    await writer.notifier.close()
    assert writer.notifier.sent == 0
    assert not writer.loop_statements._pools
