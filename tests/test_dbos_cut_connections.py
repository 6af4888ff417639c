"""The worker's DBOS engine on Postgres runs without SQLAlchemy's ping before each checkout (a round trip
per step check, record and stream write: ~0.6 ms of CPU a step). A connection the server has dropped (a
restart, a failover, an idle timeout) is then found when it is used: DBOS's retry takes a fresh one, and the
workflow goes on."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest
from dbos import DBOS, SetWorkflowID

from orchestrator.durable.config import _sqlalchemy_url, dbos_config
from orchestrator.durable.steps import Durable
from tests.dbos_launched import launched

pytestmark = pytest.mark.postgres
durable = Durable()


async def add(total: int) -> int:
    await DBOS.write_stream_async("s", [{"total": total}])
    return total + 1


@DBOS.workflow(name="cut_connections_steps")
async def steps(n: int) -> int:
    total = 0
    for _ in range(n):
        total = await durable.call(add, total)
    return total


@pytest.fixture
async def dbos(postgres_url: str) -> AsyncIterator[None]:
    config = dbos_config(_sqlalchemy_url(postgres_url), "cut-connections-test")
    assert config["db_engine_kwargs"]["pool_pre_ping"] is False
    async with launched(config):  # type: ignore[arg-type]
        yield


def cut_every_connection(url: str) -> int:
    """What a server restart does to a client's pooled connections: every other session of the database ends."""
    with psycopg.connect(url, autocommit=True) as conn:
        return len(conn.execute("select pg_terminate_backend(pid) from pg_stat_activity"
                                " where datname = current_database() and pid <> pg_backend_pid()").fetchall())


async def run(workflow_id: str, n: int) -> int:
    with SetWorkflowID(workflow_id):
        return int(await (await DBOS.start_workflow_async(steps, n)).get_result())


async def test_steps_go_on_after_the_server_dropped_every_connection(dbos: None, postgres_url: str) -> None:
    assert await run("before", 4) == 4
    assert cut_every_connection(postgres_url) >= 1
    assert await run("after", 4) == 4
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        recorded = conn.execute("select count(*) from dbos.operation_outputs where workflow_uuid = 'after'").fetchone()
        written = conn.execute("select array_agg(\"offset\" order by \"offset\") from dbos.streams"
                               " where workflow_uuid = 'after' and key = 's'").fetchone()
    assert recorded == (4,) and written == ([0, 1, 2, 3],)
