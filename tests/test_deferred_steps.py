"""`Durable.defer` against the installed DBOS on a real SQLite system database: a deferred delivery is made
inside the next step, before its work, and goes with that step's record (a replay that gets the record back
does not make it again, a step run again makes it again); the workflow and each parallel branch defer
within their own steps, and what is left at the end takes one step."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from dbos import DBOS, SetWorkflowID

from orchestrator.durable.steps import LANE_SLOTS, Durable
from tests.dbos_launched import config_for, launched, sqlite_url

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

APP = "debate-bot-deferred-test"
made: list[str] = []  # the deliveries and the steps' work, in the order they ran
durable = Durable()


async def deliver(label: str) -> None:
    made.append(label)


async def work(label: str) -> str:
    made.append(label)
    return label


@DBOS.workflow(name="deferred_sequence")
async def sequence() -> list[str]:
    await durable.defer(deliver, "d1")
    first = await durable.call(work, "s1")
    await durable.defer(deliver, "d2")
    await durable.defer(deliver, "d3")
    second = await durable.call(work, "s2")
    await durable.defer(deliver, "left")
    await durable.flush()
    await durable.flush()  # nothing is waiting: no step
    return [first, second]


async def branch(name: str) -> str:
    await durable.defer(deliver, f"{name}-start")
    done = await durable.call(work, name)
    await durable.defer(deliver, f"{name}-end")
    return done


@DBOS.workflow(name="deferred_branches")
async def branches() -> list[str]:
    await durable.defer(deliver, "before")
    return await durable.gather(branch("A"), branch("B"))


@pytest.fixture
async def dbos(tmp_path: Path) -> AsyncIterator[None]:
    async with launched(config_for(APP, sqlite_url(tmp_path), "deferred-test")):
        made.clear()
        yield


async def steps_of(workflow_id: str) -> list[str]:
    return [f"{s['function_id']} {s['function_name']}" for s in await DBOS.list_workflow_steps_async(workflow_id)]


async def test_a_deferred_delivery_is_made_inside_the_next_step_before_its_work(dbos: None) -> None:
    with SetWorkflowID("seq"):
        assert await (await DBOS.start_workflow_async(sequence)).get_result() == ["s1", "s2"]
    assert made == ["d1", "s1", "d2", "d3", "s2", "left"]
    assert await steps_of("seq") == ["1 work", "2 work", "3 deliver_deferred"]


async def test_a_replayed_step_does_not_make_its_deliveries_again_and_a_step_run_again_does(dbos: None) -> None:
    with SetWorkflowID("seq"):
        await (await DBOS.start_workflow_async(sequence)).get_result()
    made.clear()
    forked = await DBOS.fork_workflow_async("seq", 2)  # step 1 comes back from its record; 2 and 3 run again
    assert await forked.get_result() == ["s1", "s2"]
    assert made == ["d2", "d3", "s2", "left"]


async def test_branches_defer_within_their_own_steps_and_the_first_takes_what_came_before(dbos: None) -> None:
    with SetWorkflowID("fan"):
        assert await (await DBOS.start_workflow_async(branches)).get_result() == ["A", "B"]
    b = 1 + LANE_SLOTS  # the second branch's first step id
    assert await steps_of("fan") == ["1 work", "2 deliver_deferred", f"{b} work", f"{b + 1} deliver_deferred"]
    assert sorted(made) == sorted(["before", "A-start", "A", "A-end", "B-start", "B", "B-end"])
    assert made.index("before") < made.index("A") and made.index("A-start") < made.index("A")
    assert made.index("B-start") < made.index("B") < made.index("B-end")

    made.clear()
    forked = await DBOS.fork_workflow_async("fan", b)  # the first branch replays; the second runs again
    assert await forked.get_result() == ["A", "B"]
    assert made == ["B-start", "B", "B-end"]  # "before" went with the first branch's recorded step
