"""A stop is a stop: once a debate's stop has returned, the LLM peer receives no further model call from it,
and a stop racing the debate's end leaves one answer: the workflow, the log and the user all say completed
(with its verdict), or all say cancelled.

Each format runs once unstopped to count its calls, then once per stop point, all at once on one worker:
stopped as each of its calls arrives (the call in flight) and as each call's answer has been sent whole
(the next step about to begin, the moment DBOS's check before a step has to catch), through the product's
own stop (`FrontFeed.cancel`), on SQLite and Postgres. The calls counted are the peer's, by a marker in the
debate's topic; each run is awaited until its engine has returned, not for a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS
from dbos import error as dbos_error

from bots.thread.tail import FrontTailer
from orchestrator.debate.engine import Engine
from orchestrator.durable import WorkerHost, workflow_id
from orchestrator.durable.workflow import register_queue
from orchestrator.models import DebateSpec
from tests.council_scripts import TOPIC as COUNCIL_TOPIC
from tests.council_scripts import script_council
from tests.debate_harness import make_spec
from tests.durable_harness import (
    STANCE_TOPIC,
    DurableBackend,
    enqueued,
    feed_of,
    script_stances,
    worker_host,
)
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

COUNCIL_MODELS = ("openai:model-a", "openai:model-b", "openai:model-c")
FORMATS = ("challenge", "consensus", "stances", "council")
MOMENTS = ("arrived", "answered")
CONCURRENCY = 24
_runs = itertools.count(1)


def spec_for(fmt: str) -> DebateSpec:
    """A debate of `fmt` whose every model call carries a marker of its own (in its topic)."""
    marker = f"[stop-run-{next(_runs)}]"
    if fmt == "stances":
        return make_spec("stances", topic=f"{STANCE_TOPIC} {marker}")
    if fmt == "council":
        return make_spec("council", COUNCIL_MODELS, topic=f"{COUNCIL_TOPIC} {marker}")
    return make_spec(fmt, rounds=2, topic=f"Should a small team adopt a monorepo for its services? {marker}")


def marker_of(spec: DebateSpec) -> str:
    return spec.topic.rsplit(" ", 1)[1]


def calls_of(srv: FakeLLMServer, spec: DebateSpec) -> list[RequestRecord]:
    return [r for r in srv.requests if marker_of(spec) in r.prompt_text]


class EngineRuns:
    """Which debates' engines have returned (or raised) on this worker: a stopped debate's last moment."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._ended: dict[str, asyncio.Event] = {}
        run = Engine.run

        async def observed(engine: Engine, spec: DebateSpec, *args: Any, **kwargs: Any) -> Any:
            try:
                return await run(engine, spec, *args, **kwargs)
            finally:
                self.ended(spec.id).set()

        monkeypatch.setattr(Engine, "run", observed)

    def ended(self, debate_id: str) -> asyncio.Event:
        return self._ended.setdefault(debate_id, asyncio.Event())


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> EngineRuns:
    return EngineRuns(monkeypatch)


@pytest.fixture
async def host(llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend,
               engines: EngineRuns) -> AsyncIterator[WorkerHost]:
    script_judge(llm_server, "A")
    script_stances(llm_server)
    script_council(llm_server, COUNCIL_MODELS, latency_s=0.0)
    # 46 debates on one worker of a loaded 2-core CI machine: a call's deadline must not be what ends one
    async with worker_host(llm_server, backend.log(tmp_path), backend, env={"DEBATE_CALL_TIMEOUT": "120"}) as running:
        await register_queue(CONCURRENCY)  # the stop points run side by side
        yield running


async def nth_call(srv: FakeLLMServer, spec: DebateSpec, n: int) -> RequestRecord:
    """The debate's `n`-th model call, once the peer has received it."""
    seen, index = 0, 0
    while True:
        index += 1
        record = await srv.wait_for_requests(index)
        if marker_of(spec) in record.prompt_text:
            seen += 1
            if seen == n:
                return record


async def stopped_at(srv: FakeLLMServer, host: WorkerHost, engines: EngineRuns, fmt: str, n: int,
                     moment: str) -> tuple[str, int, list[str]]:
    """Run a debate and stop it at its `n`-th call's `moment`; the calls the peer received after the stop."""
    spec = spec_for(fmt)
    await enqueued(host, spec, f"stop-{spec.id}")
    ended = engines.ended(spec.id)
    waiting = asyncio.ensure_future(nth_call(srv, spec, n))
    finished = asyncio.ensure_future(ended.wait())
    await asyncio.wait({waiting, finished}, return_when=asyncio.FIRST_COMPLETED)
    if not waiting.done():  # it ended before its n-th call (the unstopped run made more): nothing to stop
        waiting.cancel()
        record = await host.store.get_debate(spec.id, turns=False)
        ended_as = f"{record.status}: {record.error}" if record is not None else "not in the log"
        return f"{fmt} #{n} {moment} ended {ended_as} after {len(calls_of(srv, spec))} calls", -1, []
    finished.cancel()
    call = waiting.result()
    if moment == "answered":
        await call.done.wait()
    told = await (await stopper(host)).stop(spec.id)
    before = len(calls_of(srv, spec))
    await ended.wait()
    after = calls_of(srv, spec)[before:]
    point = f"{fmt} #{n} {moment}"
    # one answer: the workflow's end, the log's and what the user is told agree (item 20 of issue 57)
    handle = await DBOS.retrieve_workflow_async(workflow_id(spec.id))
    with contextlib.suppress(dbos_error.DBOSAwaitedWorkflowCancelledError):
        await handle.get_result(polling_interval_sec=0.05)
    status = await handle.get_status()
    record = await host.store.get_debate(spec.id, turns=False)
    assert told is not None and record is not None and status is not None
    answers = (status.status, record.status, told.status)
    assert answers in (("SUCCESS", "completed", "completed"), ("CANCELLED", "cancelled", "cancelled")), (point,
                                                                                                        answers)
    return point, before, [f"{r.model}: {r.last_user[:60]}" for r in after]


async def stopper(host: WorkerHost) -> FrontTailer:
    """What a front stops a debate with (`/debate stop`): the workflow cancelled, the log told, the thread
    (none here) shown the end."""
    async def unreachable(_record: Any) -> None:
        return None

    return FrontTailer(await feed_of(host), host.store, "slack", unreachable)


def stop_points(counts: dict[str, int]) -> Iterator[tuple[str, int, str]]:
    for fmt, count in counts.items():
        for n in range(1, count + 1):
            for moment in MOMENTS:
                yield fmt, n, moment


async def test_no_model_call_starts_after_a_stop_in_any_format(
    llm_server: FakeLLMServer, host: WorkerHost, engines: EngineRuns, backend: DurableBackend
) -> None:
    srv = llm_server
    counts: dict[str, int] = {}
    for fmt in FORMATS:  # each format unstopped: how many calls it makes, so each is a stop point
        spec = spec_for(fmt)
        outcome = await (await enqueued(host, spec)).get_result(polling_interval_sec=0.05)
        assert outcome["status"] == "completed", (fmt, outcome)
        counts[fmt] = len(calls_of(srv, spec))
    assert all(count >= 3 for count in counts.values()), counts

    results = await asyncio.gather(*(stopped_at(srv, host, engines, fmt, n, moment)
                                     for fmt, n, moment in stop_points(counts)))
    late = {point: calls for point, _before, calls in results if calls}
    assert late == {}, f"model calls after a stop on {backend.name}: {late}"
    reached = [point for point, before, _calls in results if before >= 0]
    assert len(reached) == len(results), [point for point, before, _ in results if before < 0]


MASS = 100


async def test_a_hundred_debates_stopped_at_once_each_stop_holds(
    llm_server: FakeLLMServer, host: WorkerHost, engines: EngineRuns, backend: DurableBackend
) -> None:
    """100 debates on one worker, each with its first model call in flight, stopped all at once: DBOS's
    bounded thread pool (MAX_EXECUTOR_THREADS) serves the stops' cancels, the steps' records and every
    handle's polls, and each stop still ends its debate (cancelled everywhere) with no model call after it."""
    srv = llm_server
    held = asyncio.Event()
    srv.add_rule(Reply(gate=held), match=lambda record: "[mass-stop-" in record.prompt_text)
    await register_queue(MASS)
    specs = [make_spec("challenge", rounds=2, topic=f"Should a small team adopt a monorepo? [mass-stop-{i}]")
             for i in range(MASS)]
    for spec in specs:
        await enqueued(host, spec, f"mass-{spec.id}")
    while sum(1 for r in srv.requests if "[mass-stop-" in r.prompt_text) < MASS:  # every first call in flight
        await srv.wait_for_requests(len(srv.requests) + 1)
    front = await stopper(host)
    told = await asyncio.gather(*(front.stop(spec.id) for spec in specs))
    before = {spec.id: len(calls_of(srv, spec)) for spec in specs}
    await asyncio.wait_for(asyncio.gather(*(engines.ended(spec.id).wait() for spec in specs)), 120)
    held.set()
    assert [t.status if t is not None else None for t in told] == ["cancelled"] * MASS
    late = {spec.id: len(calls_of(srv, spec)) - before[spec.id] for spec in specs}
    assert set(late.values()) == {0}, f"model calls after a stop on {backend.name}: {late}"
    statuses = await asyncio.gather(*(DBOS.get_workflow_status_async(workflow_id(spec.id)) for spec in specs))
    assert {status.status if status is not None else None for status in statuses} == {"CANCELLED"}
    records = [await host.store.get_debate(spec.id, turns=False) for spec in specs]
    assert {record.status if record is not None else None for record in records} == {"cancelled"}
