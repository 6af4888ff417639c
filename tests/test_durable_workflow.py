"""Debates as DBOS workflows in this process: the same turns as a direct run, on SQLite files and with
the log and the workflows in Postgres; one start per request; where the workflow engine's tables go."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS
from dbos import error as dbos_error

from orchestrator.config import Settings
from orchestrator.durable import (
    WORKFLOW_VERSION,
    FrontFeed,
    prepare_system_db,
    stream_sink,
    system_db_url,
    workflow_id,
)
from orchestrator.durable.workflow import UNSHOWN
from orchestrator.events import (
    CallRecorded,
    DebateFinished,
    Notice,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnStarted,
)
from orchestrator.log import Store
from tests.council_scripts import script_council
from tests.debate_harness import make_spec, run_debate, settings_for
from tests.durable_harness import (
    STANCE_TOPIC,
    DurableBackend,
    enqueued,
    feed_of,
    logged_notices,
    logged_turns,
    read_events,
    script_stances,
    shown_texts,
    worker_host,
)
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import is_judge, script_judge
from tests.log_backends import LogBackend


@pytest.fixture
def sqlite(system_db: Path) -> DurableBackend:
    return DurableBackend.sqlite(system_db)


# -- where the workflow database is ---------------------------------------------------------------


def test_the_workflow_database_is_the_workflow_url_then_the_log_postgres_then_a_file_beside_the_log(
    tmp_path: Path,
) -> None:
    log_db = tmp_path / "debates.db"
    pg, other = "postgresql://debate@db.internal:5432/debates", "postgresql://debate@db.internal:5432/workflows"

    def url(**env: str) -> str:
        return system_db_url(Settings(_env_file=None, DEBATE_DB=log_db, **env))  # type: ignore[call-arg]

    assert url() == f"sqlite:///{log_db.resolve()}.workflows.sqlite"
    assert url(DEBATE_DATABASE_URL=pg) == pg
    assert url(DEBATE_DATABASE_URL="postgres://debate@db.internal:5432/debates") == pg  # SQLAlchemy's spelling
    assert url(DEBATE_DATABASE_URL=pg, DEBATE_WORKFLOW_DB_URL=other) == other
    assert url(DEBATE_WORKFLOW_DB_URL=other) == other  # the log stays in its SQLite file
    prepare_system_db(pg)  # nothing of SQLite's is done for Postgres
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.postgres
async def test_a_front_and_a_worker_given_only_the_database_url_keep_log_and_workflows_in_postgres(
    llm_server: FakeLLMServer, tmp_path: Path, postgres_backend: DurableBackend
) -> None:
    srv = llm_server
    script_judge(srv, "A")
    backend = postgres_backend
    log = backend.log(tmp_path)
    spec = make_spec("challenge", rounds=1)
    settings = settings_for(srv, env=backend.env(log))
    async with worker_host(srv, log, backend):  # no db_url: the settings name the database
        feed = await FrontFeed.open(settings)  # the front: a DBOSClient on the same database
        try:
            assert await feed.enqueue(spec, "trigger-pg") == spec.id
            events = [e async for e in feed.events(spec.id)]
        finally:
            await feed.close()
    assert isinstance(events[-1], DebateFinished) and events[-1].outcome.status == "completed"
    assert [t[:4] for t in logged_turns(log, spec.id)] == [(1, "A", "opening", "ok"), (1, "B", "challenge", "ok")]
    assert len(srv.requests) == 4  # proposer, challenger, two judge passes: nothing made twice
    assert backend.intact(log)
    tables = log.sql("select table_schema, table_name from information_schema.tables"
                     " where table_schema not in ('pg_catalog', 'information_schema')")
    by_schema: dict[str, set[str]] = {}
    for schema, name in tables:
        by_schema.setdefault(schema, set()).add(name)
    # the log's tables in public, DBOS's in a schema of its own: no name in both
    assert set(by_schema) == {"public", "dbos"}
    assert {"debates", "turns", "votes", "debate_log_migrations"} <= by_schema["public"]
    assert {"workflow_status", "operation_outputs", "streams"} <= by_schema["dbos"]
    assert not by_schema["public"] & by_schema["dbos"]
    workflows = log.sql("select status from dbos.workflow_status where workflow_uuid = ?", [workflow_id(spec.id)])
    assert workflows == [("SUCCESS",)]


# -- a debate as a workflow -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["challenge", "consensus", "stances", "council"])
async def test_a_workflow_logs_exactly_the_turns_of_a_direct_run(
    fmt: str, llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend
) -> None:
    srv = llm_server
    script_judge(srv, "A")
    if fmt == "stances":
        script_stances(srv)
    if fmt == "council":
        script_council(srv, ("openai:model-a", "openai:model-b"))
    topic = STANCE_TOPIC if fmt == "stances" else "Should a small team adopt a monorepo for its services?"
    direct_spec = make_spec(fmt, topic=topic)
    direct = await run_debate(srv, direct_spec, db=tmp_path / "direct.db")
    assert direct.outcome.status == "completed", direct.outcome.error
    direct_requests = len(srv.requests)

    spec = make_spec(fmt, topic=topic)
    log, direct_log = backend.log(tmp_path, "durable.db"), LogBackend("sqlite", str(tmp_path / "direct.db"))
    async with worker_host(srv, log, backend) as host:
        handle = await enqueued(host, spec, f"request-{fmt}")
        assert handle.workflow_id == workflow_id(spec.id)
        outcome = await handle.get_result(polling_interval_sec=0.05)
        events = await read_events(backend.workflow_db, spec.id)
        steps = [s["function_name"].rpartition(".")[2]
                 for s in await DBOS.list_workflow_steps_async(workflow_id(spec.id), load_output=False)]

    assert outcome == direct.outcome.model_dump(mode="json")
    if fmt == "challenge":  # a turn is one step; a changed layout must bump WORKFLOW_VERSION (README, deploys)
        round_steps = ["start_round", "model_turn", "model_turn", "complete_round"]
        # the events between (DebateStarted, the judging notices) go with the step after them
        assert steps == [*round_steps, *round_steps, "model_call", "model_call", "deliver"], (
            f"the step layout of {WORKFLOW_VERSION} changed: {steps}")
    durable_turns = logged_turns(log, spec.id)  # a parallel round logs in completion order
    assert sorted(durable_turns) == sorted(logged_turns(direct_log, direct_spec.id))
    assert len(durable_turns) >= 4 and len({t[:3] for t in durable_turns}) == len(durable_turns)
    assert logged_notices(log, spec.id) == logged_notices(direct_log, direct_spec.id)
    assert len(srv.requests) == 2 * direct_requests  # no call made twice

    # the stream: every event of the direct run a thread shows, once (nothing ran twice), and none it does not
    # show; the streamed text begins the logged text, and the turn's closing event carries its end (a durable
    # stream sends no tail delta)
    keys = [e.key for e in events if e.type != "text_delta"]  # type: ignore[attr-defined]
    shown = [e for e in direct.events if e.type != "text_delta" and not isinstance(e, UNSHOWN)]  # type: ignore[attr-defined]
    assert sorted(keys) == sorted(e.key for e in shown)
    assert any(isinstance(e, UNSHOWN) for e in direct.events) and not any(isinstance(e, UNSHOWN) for e in events)
    assert len(set(keys)) == len(keys)
    assert isinstance(events[-1], DebateFinished)
    streamed = shown_texts(events)
    for event in events:
        # stances shows its envelopes and a council its ballots rendered, never streamed
        if isinstance(event, TurnCompleted) and fmt != "stances" and event.turn.kind != "ranking":
            shown = streamed[event.key.removesuffix(":end")]
            assert shown and event.turn.text.startswith(shown)


@pytest.mark.slow
async def test_a_repeated_request_starts_one_debate(
    llm_server: FakeLLMServer, tmp_path: Path, sqlite: DurableBackend
) -> None:
    srv = llm_server
    script_judge(srv, "A")
    first, retry = make_spec("challenge", rounds=1), make_spec("challenge", rounds=1)  # a retry builds a new spec
    log = sqlite.log(tmp_path)
    async with worker_host(srv, log, sqlite) as host:
        handle = await enqueued(host, first, "trigger-123")
        again = await enqueued(host, retry, "trigger-123")
        assert again.workflow_id == handle.workflow_id == workflow_id(first.id)
        outcome = await handle.get_result(polling_interval_sec=0.05)
        assert await again.get_result(polling_interval_sec=0.05) == outcome
        calls = len(srv.requests)
        # the same debate enqueued once more after it ended returns its result and runs nothing
        assert await (await enqueued(host, first, "trigger-456")).get_result(polling_interval_sec=0.05) == outcome

    assert outcome["status"] == "completed"
    assert calls == 4 and len(srv.requests) == calls  # proposer, challenger, two judge passes
    assert len(logged_turns(log, first.id)) == 2
    assert logged_turns(log, retry.id) == []


def held_call(srv: FakeLLMServer, model: str) -> tuple[asyncio.Event, list[RequestRecord]]:
    """`model`'s first call hangs (until its client goes away); returns (arrived, [that request])."""
    arrived = asyncio.Event()
    held: list[RequestRecord] = []

    def match(r: RequestRecord) -> bool:
        if r.model == model and not held:
            held.append(r)
            arrived.set()
            return True
        return False

    srv.add_rule(Reply(gate=asyncio.Event()), match, times=1)
    return arrived, held


@pytest.mark.slow
async def test_a_stop_cancels_the_call_in_flight_and_marks_nothing_failed(
    llm_server: FakeLLMServer, tmp_path: Path, sqlite: DurableBackend
) -> None:
    srv = llm_server
    arrived, held = held_call(srv, "model-b")
    spec = make_spec("challenge", rounds=1)
    log = sqlite.log(tmp_path)
    async with worker_host(srv, log, sqlite) as host:
        handle = await enqueued(host, spec, "trigger-stop")
        await arrived.wait()
        await (await feed_of(host)).cancel(spec.id)
        await held[0].done.wait()  # the model call was abandoned (its connection closed)
        assert held[0].cancelled
        with pytest.raises(dbos_error.DBOSAwaitedWorkflowCancelledError):
            await handle.get_result(polling_interval_sec=0.05)
        assert (await handle.get_status()).status == "CANCELLED"

    # the workflow wrote nothing about the stop: the front that stopped it records the outcome
    async with Store(tmp_path / "log.db") as store:
        record = await store.get_debate(spec.id)
    assert record is not None and record.status == "running"
    assert [t[:3] for t in logged_turns(log, spec.id)] == [(1, "A", "opening")]


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.slow
async def test_a_graceful_stop_leaves_the_debate_pending_and_a_relaunch_finishes_it(
    llm_server: FakeLLMServer, tmp_path: Path, sqlite: DurableBackend
) -> None:
    srv = llm_server
    script_judge(srv, "A")
    arrived, held = held_call(srv, "model-b")
    spec = make_spec("challenge", rounds=1)
    log = sqlite.log(tmp_path)
    dbos_said = Records()
    logging.getLogger("dbos").addHandler(dbos_said)
    try:
        async with worker_host(srv, log, sqlite) as host:
            handle = await enqueued(host, spec, "trigger-sigterm")
            await arrived.wait()
            await host.stop(grace_s=0.1)  # the held call outlasts the grace period: it is abandoned
            assert held[0].cancelled
    finally:
        logging.getLogger("dbos").removeHandler(dbos_said)
    # the stop says once that calls were in flight; DBOS's own line per cancelled step is not repeated to the operator
    assert not [m for m in dbos_said.messages if "cancelled for workflow or step" in m], dbos_said.messages
    async with Store(tmp_path / "log.db") as store:
        assert (record := await store.get_debate(spec.id)) is not None and record.status == "running"

    async with worker_host(srv, log, sqlite):  # the same executor id recovers it
        handle = await DBOS.retrieve_workflow_async(handle.workflow_id)
        outcome = await handle.get_result(polling_interval_sec=0.05)

    assert outcome["status"] == "completed"
    assert [t[:4] for t in logged_turns(log, spec.id)] == [(1, "A", "opening", "ok"), (1, "B", "challenge", "ok")]
    assert Counter(r.model for r in srv.requests if not is_judge(r)) == {"model-a": 1, "model-b": 2}


@pytest.mark.slow
async def test_a_stream_write_takes_the_events_held_before_it_and_a_step_writes_before_its_record(
    llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = llm_server
    script_judge(srv, "A", steady=False)  # passes that split: the judging posts a notice with the verdict
    spec = make_spec("challenge", rounds=1)
    writes: list[list[str]] = []  # each write's events' types, in order
    write = stream_sink.StreamSink._write

    async def traced(self: stream_sink.StreamSink, values: list[Any]) -> None:
        step = DBOS.step_id
        await write(self, values)
        recorded = {s["function_id"] for s in await DBOS.list_workflow_steps_async(workflow_id(spec.id),
                                                                                  load_output=False)}
        assert step not in recorded  # a step's own writes are all made before DBOS records it
        writes.append([v["type"] for v in values])

    monkeypatch.setattr(stream_sink.StreamSink, "_write", traced)
    log = backend.log(tmp_path, "durable.db")
    async with worker_host(srv, log, backend) as host:
        handle = await enqueued(host, spec, "request-held")
        assert (await handle.get_result(polling_interval_sec=0.05))["status"] == "completed"
        events = await read_events(backend.workflow_db, spec.id)

    assert [e.type for e in events] == [t for types in writes for t in types]  # type: ignore[attr-defined]
    # a turn's start is written at once (a thread may post its message before the text comes); the judging's
    # notice, the verdict and the debate's end go in one write
    assert all(types[-1] == "turn_started" for types in writes if "turn_started" in types)
    assert writes[-1][-2:] == ["verdict", "debate_finished"] and len(writes[-1]) >= 3
    assert len(writes) <= len(events) - 2


class _Streams:
    def __init__(self) -> None:
        self.writes: list[list[str]] = []
        self.written = asyncio.Event()

    async def write(self, values: list[Any]) -> None:
        self.writes.append([v["type"] for v in values])
        self.written.set()


def _traced(sink: stream_sink.StreamSink) -> _Streams:
    streams = _Streams()
    sink._write = streams.write  # type: ignore[method-assign]
    return streams


async def test_a_held_event_is_written_when_its_hold_ends_and_a_text_or_the_step_end_writes_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stream_sink, "in_step", lambda: True)
    sink = stream_sink.StreamSink(hold_s=0.05)
    streams = _traced(sink)
    where = dict(debate_id="d1", round=1, seat="A", role="proposer", kind="argument", model="openai:m")
    await sink.handle(RoundStarted(debate_id="d1", round=1, total=2))
    assert streams.writes == []
    await asyncio.wait_for(streams.written.wait(), 5)  # nothing followed: the hold's end wrote it alone
    assert streams.writes == [["round_started"]]

    await sink.handle(Notice(debate_id="d1", text="A note"))
    await sink.handle(TurnStarted(**where))
    assert streams.writes[1:] == [["notice", "turn_started"]]  # the turn's start took what was held, at once
    await sink.handle(TextDelta(debate_id="d1", round=1, seat="A", kind="argument", delta="The first words"))
    assert streams.writes[2:] == [["text_delta"]]
    await sink.handle(RoundStarted(debate_id="d1", round=2, total=2))
    await sink.handle(Notice(debate_id="d1", text="Another"))
    await sink.step_ended()
    assert streams.writes[3:] == [["round_started", "notice"]]
    await sink.handle(CallRecorded(debate_id="d1", attempt="a1", model="openai:m", purpose="judge"))
    await sink.step_ended()
    assert len(streams.writes) == 4  # what no thread shows is never written


async def test_outside_a_step_an_event_is_written_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_sink, "in_step", lambda: False)
    sink = stream_sink.StreamSink()
    streams = _traced(sink)
    await sink.handle(RoundStarted(debate_id="d1", round=1, total=2))
    assert streams.writes == [["round_started"]]


async def test_a_hold_that_ends_after_its_step_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    stepping = [True]
    monkeypatch.setattr(stream_sink, "in_step", lambda: stepping[0])
    sink = stream_sink.StreamSink(hold_s=0.01)
    streams = _traced(sink)
    await sink.handle(RoundStarted(debate_id="d1", round=1, total=2))
    async with sink._lock:  # a write under way: the hold's end waits for it, and its step ends meanwhile
        fired = asyncio.Event()
        monkeypatch.setattr(sink, "_flush_logged", _signalling(sink._flush_logged, fired))
        await asyncio.wait_for(fired.wait(), 5)
        stepping[0] = False
    await asyncio.gather(*sink._late)
    assert streams.writes == []  # not from an ended step's context: the next step's end writes it
    stepping[0] = True
    await sink.step_ended()
    assert streams.writes == [["round_started"]]


def _signalling(flush: Any, fired: asyncio.Event) -> Any:
    async def flushing(**kwargs: Any) -> None:
        fired.set()
        await flush(**kwargs)

    return flushing
