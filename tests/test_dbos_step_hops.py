"""orchestrator/durable/dbos_step_hops.py against the installed DBOS on a real SQLite system database: a step
hops to the thread pool twice, not three times, and its result, its error and a replay are what DBOS's own
`then` gives."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from dbos._outcome import Pending

from orchestrator.durable import dbos_step_hops
from tests.dbos_launched import config_for, launched, sqlite_url

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

APP = "debate-bot-step-hops-test"
ran: list[str] = []


async def answer(n: int) -> int:
    ran.append(f"answer {n}")
    return n * 2


async def refuse(n: int) -> int:
    ran.append(f"refuse {n}")
    raise ValueError(f"no {n}")


@DBOS.workflow(name="step_hops_steps")
async def steps(count: int) -> list[int]:
    return [await DBOS.run_step_async({"name": "answer"}, answer, i) for i in range(count)]


@DBOS.workflow(name="step_hops_refusal")
async def refusal() -> str:
    try:
        await DBOS.run_step_async({"name": "refuse"}, refuse, 7)
    except ValueError as error:
        return f"caught: {error}"
    return "not raised"


@pytest.fixture
async def dbos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    # DBOS's own `then` and `intercept` for the test (a worker started in this process earlier installed ours), and
    # whichever was there put back after it
    monkeypatch.setattr(Pending, "then", dbos_step_hops.DBOS_THEN)
    monkeypatch.setattr(Pending, "intercept", dbos_step_hops.DBOS_INTERCEPT)
    async with launched(config_for(APP, sqlite_url(tmp_path), "hops-test")):
        ran.clear()
        yield


async def hops_per_step(monkeypatch: pytest.MonkeyPatch, label: str) -> float:
    """Calls to the thread pool per step: a workflow of 5 steps less one of 1, divided by 4."""
    hops: list[Any] = []
    real = asyncio.to_thread

    async def to_thread(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        hops.append(func)
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    counts = []
    for count in (1, 5):
        hops.clear()
        with SetWorkflowID(f"{label}-{count}"):
            assert await (await DBOS.start_workflow_async(steps, count)).get_result() == [i * 2 for i in range(count)]
        counts.append(len(hops))
    monkeypatch.setattr(asyncio, "to_thread", real)
    return (counts[1] - counts[0]) / 4


async def test_a_step_hops_twice_with_the_swap_and_three_times_without(dbos: None,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    assert await hops_per_step(monkeypatch, "dbos") == 3
    assert dbos_step_hops.install()
    assert not dbos_step_hops.install()  # once is enough
    assert await hops_per_step(monkeypatch, "swapped") == 2


async def test_results_errors_and_replays_are_dbos_own(dbos: None) -> None:
    assert dbos_step_hops.install()
    with SetWorkflowID("values"):
        assert await (await DBOS.start_workflow_async(steps, 3)).get_result() == [0, 2, 4]
    with SetWorkflowID("error"):
        assert await (await DBOS.start_workflow_async(refusal)).get_result() == "caught: no 7"
    assert ran == ["answer 0", "answer 1", "answer 2", "refuse 7"]

    recorded = await DBOS.list_workflow_steps_async("values")
    assert [(s["function_name"], s["output"], s["error"]) for s in recorded] == [
        ("answer", 0, None), ("answer", 2, None), ("answer", 4, None)]
    (refused,) = await DBOS.list_workflow_steps_async("error")
    assert refused["function_name"] == "refuse" and refused["output"] is None
    assert isinstance(refused["error"], ValueError) and str(refused["error"]) == "no 7"

    # the same workflow ids again: DBOS hands back what was recorded, and nothing runs again
    with SetWorkflowID("values"):
        assert await (await DBOS.start_workflow_async(steps, 3)).get_result() == [0, 2, 4]
    with SetWorkflowID("error"):
        assert await (await DBOS.start_workflow_async(refusal)).get_result() == "caught: no 7"
    assert len(ran) == 4
