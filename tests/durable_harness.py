"""Durable debates under test: a WorkerHost in this process, or a worker in a real subprocess that a
test can SIGKILL and launch again, both against the loopback LLM server, on either backend
(`DurableBackend`): real SQLite files, or one database of the tests' real PostgreSQL server holding both
the log and the workflows, as DEBATE_DATABASE_URL alone puts them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dbos import DBOS, DBOSClient, WorkflowHandleAsync
from pydantic import TypeAdapter

from orchestrator.config import Settings
from orchestrator.durable import (
    APP_NAME,
    STREAM,
    FrontFeed,
    WorkerHost,
    continuation_workflow_id,
    system_db_url,
    workflow_id,
    workflow_version,
)
from orchestrator.durable.config import sqlite_path
from orchestrator.events import Event, EventBase, TextDelta
from orchestrator.models import DebateSpec
from orchestrator.providers import ProviderRegistry
from tests.debate_harness import settings_for
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.log_backends import LogBackend
from tests.postgres_server import PostgresServer

EXECUTOR = "worker-test"
STANCE_TOPIC = "Should a small team write its backend in a statically typed language?"
STANCES = (
    "Static typing lowers the defect rate enough to pay for itself within a year.",
    "Dynamic typing with strict tests ships features faster at equal quality.",
)
_EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def db_url(path: Path) -> str:
    return f"sqlite:///{path}"


# -- where the log and the workflows live ----------------------------------------------------------

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
STORAGE_VARIABLES = ("DEBATE_DB", "DEBATE_DATABASE_URL", "DEBATE_WORKFLOW_DB_URL")


@dataclass(frozen=True)
class DurableBackend:
    """SQLite: the log a file per test, the workflow database one file per module (a queue DBOS knows
    already starts without its 1 s discovery). Postgres: one database per module for both, the
    workflow database found the way a deployment finds it, from DEBATE_DATABASE_URL alone."""

    name: str
    workflow_db: str  # the DBOS system database's URL
    database_url: str | None = None  # Postgres: what DEBATE_DATABASE_URL holds
    unused_db: Path | None = None  # Postgres: DEBATE_DB too, where nothing may appear

    @classmethod
    def sqlite(cls, system_db: Path) -> DurableBackend:
        return cls("sqlite", db_url(system_db))

    @classmethod
    def postgres(cls, url: str, folder: Path) -> DurableBackend:
        unused = folder / "debates.db"
        settings = Settings(_env_file=None, DEBATE_DATABASE_URL=url, DEBATE_DB=unused)  # type: ignore[call-arg]
        return cls("postgres", system_db_url(settings), url, unused)

    def log(self, tmp_path: Path, name: str = "log.db") -> LogBackend:
        if self.database_url is not None:
            return LogBackend("postgres", self.database_url)
        return LogBackend("sqlite", str(tmp_path / name))

    def env(self, log: LogBackend) -> dict[str, str]:
        """The storage environment of a process using `log`."""
        return log.env | ({"DEBATE_DB": str(self.unused_db)} if self.unused_db is not None else {})

    @property
    def host_db_url(self) -> str | None:
        """The `db_url` a WorkerHost is given: SQLite, the module's file; Postgres, none (the settings name it)."""
        return None if self.database_url is not None else self.workflow_db

    def intact(self, log: LogBackend) -> bool:
        """SQLite: both files pass `integrity_check`. Postgres: no SQLite file appeared at DEBATE_DB."""
        if self.unused_db is not None:
            return not list(self.unused_db.parent.glob(f"{self.unused_db.name}*"))
        workflows = sqlite_path(self.workflow_db)
        assert workflows is not None
        return integrity(Path(log.target)) == "ok" and integrity(workflows) == "ok"


@contextmanager
def scratch_database(server: PostgresServer) -> Iterator[str]:
    """A fresh database on the tests' server, dropped afterwards."""
    name = f"d_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f"create database {name}")
    try:
        yield server.url(name)
    finally:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute(f"drop database if exists {name} with (force)")


def postgres_backend_for(
    tmp_path_factory: pytest.TempPathFactory, server: PostgresServer
) -> Iterator[DurableBackend]:
    """The body of a module-scoped `postgres_backend` fixture: a database of its own for the module."""
    with scratch_database(server) as url:
        yield DurableBackend.postgres(url, tmp_path_factory.mktemp("postgres"))


def durable_backend(request: pytest.FixtureRequest) -> DurableBackend:
    """The body of a module-scoped `backend` fixture parametrized with BACKENDS: the module's
    `system_db` or `postgres_backend` fixture (one workflow database per module and backend)."""
    if request.param == "sqlite":
        return DurableBackend.sqlite(request.getfixturevalue("system_db"))
    backend: DurableBackend = request.getfixturevalue("postgres_backend")
    return backend


@asynccontextmanager
async def worker_host(srv: FakeLLMServer, log: LogBackend, backend: DurableBackend,
                      env: dict[str, str] | None = None) -> AsyncIterator[WorkerHost]:
    """A launched WorkerHost in this process (DBOS is a process-wide singleton: one at a time); `env` adds
    settings."""
    settings = settings_for(srv, env=backend.env(log) | (env or {}))
    registry = ProviderRegistry(settings)
    try:
        async with log.open() as store:
            host = WorkerHost(settings, store, registry, executor_id=EXECUTOR, concurrency=4,
                              db_url=backend.host_db_url)
            await host.start()
            try:
                yield host
            finally:
                feed = _feeds.pop(id(host), None)
                if feed is not None:
                    await feed.close()
                await host.stop(grace_s=5.0)
    finally:
        await registry.aclose()


_feeds: dict[int, FrontFeed] = {}  # per running WorkerHost: the product's way in for its tests


async def feed_of(host: WorkerHost) -> FrontFeed:
    """A FrontFeed of `host`'s workflow database (closed with the host), as a front would hold."""
    feed = _feeds.get(id(host))
    if feed is None:
        feed = _feeds[id(host)] = await FrontFeed.connect(host.db_url, application_name=APP_NAME,
                                                          application_version=workflow_version())
    return feed


async def enqueued(host: WorkerHost, spec: DebateSpec, request_key: str | None = None) -> WorkflowHandleAsync[Any]:
    """Queue `spec` as a front does (FrontFeed.enqueue); the handle of the debate running for the request."""
    debate_id = await (await feed_of(host)).enqueue(spec, request_key)
    return await DBOS.retrieve_workflow_async(workflow_id(debate_id))


async def enqueued_continuation(host: WorkerHost, debate_id: str, segment: int,
                                request_key: str | None = None) -> WorkflowHandleAsync[Any]:
    """Queue a continuation's segment as a front does (FrontFeed.enqueue_continuation); its handle."""
    running = await (await feed_of(host)).enqueue_continuation(debate_id, segment, request_key)
    return await DBOS.retrieve_workflow_async(continuation_workflow_id(debate_id, running))


# -- scripted replies ----------------------------------------------------------------------------


def envelope(stance: str, *arguments: str, done: bool = False) -> str:
    body = {"stance": stance, "arguments": list(arguments), "rebuttals": [], "no_new_points": done}
    return f"```json\n{json.dumps(body)}\n```"


def stances_debater(model: str, round_no: int) -> Callable[[RequestRecord], bool]:
    return lambda r: r.model == model and f"Round {round_no} of up to 3" in r.last_user


def script_stances(srv: FakeLLMServer, models: tuple[str, ...] = ("model-a", "model-b")) -> None:
    """Two stances; each debater opens with OPEN-<letter>, then reports no new points."""
    split = {"debatable": True, "stances": list(STANCES), "reason": "Two camps."}
    srv.add_rule(Reply(text=json.dumps(split)), lambda r: "Split this topic" in r.last_user)
    for i, model in enumerate(models):
        letter = "AB"[i]
        srv.add_rule(Reply(text=envelope(STANCES[i], f"OPEN-{letter} evidence")), stances_debater(model, 1))
        srv.add_rule(Reply(text=envelope(STANCES[i], f"REB-{letter}", done=True)), stances_debater(model, 2))


# -- what was logged -------------------------------------------------------------------------------


def logged_turns(log: LogBackend, debate_id: str) -> list[tuple[int, str, str, str, str]]:
    """(round, seat, kind, status, text) of every logged turn, in the order they were written."""
    rows = log.sql("select round, seat, kind, status, text from turns where debate_id = ? order by id", [debate_id])
    return [tuple(r) for r in rows]  # type: ignore[misc]


def logged_notices(log: LogBackend, debate_id: str) -> list[tuple[str, str]]:
    rows = log.sql("select level, text from notices where debate_id = ? order by id", [debate_id])
    return [tuple(r) for r in rows]  # type: ignore[misc]


def integrity(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("pragma integrity_check").fetchone()[0]


class StreamFollower:
    """Reads a debate's stream as a front would (a DBOSClient, no launch) until the workflow ends;
    `events` holds every entry as written, repeats included."""

    def __init__(self, workflow_db: str, debate_id: str) -> None:
        self.workflow_db = workflow_db
        self.debate_id = debate_id
        self.events: list[EventBase] = []
        self._changed = asyncio.Condition()

    async def run(self) -> list[EventBase]:
        client = DBOSClient(system_database_url=self.workflow_db, application_name=APP_NAME)
        try:
            async for value in client.read_stream_async(workflow_id(self.debate_id), STREAM,
                                                        polling_interval_sec=0.05):
                async with self._changed:  # an entry is one event, or a list of a step's events
                    self.events.extend(_EVENT.validate_python(v) for v in entries(value))
                    self._changed.notify_all()
        finally:
            await asyncio.to_thread(client.destroy)
        return self.events

    async def wait_for(self, predicate: Callable[[EventBase], bool]) -> EventBase:
        async with self._changed:
            await self._changed.wait_for(lambda: any(predicate(e) for e in self.events))
        return next(e for e in self.events if predicate(e))


def entries(value: Any) -> list[Any]:
    """The events of one stream entry: one, or a list of a step's events."""
    return value if isinstance(value, list) else [value]


async def read_events(workflow_db: str, debate_id: str) -> list[EventBase]:
    """Every entry of the debate's stream, as written (repeats included), until the workflow ends."""
    return await StreamFollower(workflow_db, debate_id).run()


def shown_texts(events: list[EventBase]) -> dict[str, str]:
    """What a reader shows per turn key: deltas deduplicated by (attempt, offset), a new attempt
    starting the turn's text over."""
    attempts: dict[str, str] = {}
    texts: dict[str, dict[int, str]] = {}
    for event in events:
        if not isinstance(event, TextDelta):
            continue
        if attempts.get(event.key) != event.attempt:
            attempts[event.key] = event.attempt
            texts[event.key] = {}
        texts[event.key][event.offset] = event.delta
    return {key: "".join(parts[o] for o in sorted(parts)) for key, parts in texts.items()}


# -- a worker in a subprocess ----------------------------------------------------------------------

# how long a worker subprocess may take to import dbos and the SDKs and launch: generous, as the other
# test workers (make test runs one per core) are starting theirs on the same cores
STARTUP_S = 120
_SPAWNED: list[asyncio.subprocess.Process] = []


def track(proc: asyncio.subprocess.Process) -> asyncio.subprocess.Process:
    """Remember a worker subprocess, so that `reap_workers` ends it if the test fails before it exits."""
    _SPAWNED.append(proc)
    return proc


async def reap_workers() -> None:
    """Kill the worker subprocesses a failed test left running (a passing test has waited for each): left
    alone, they would poll their workflow database for minutes, on the CPU the next tests need."""
    while _SPAWNED:
        proc = _SPAWNED.pop()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

_WORKER = """
import asyncio, json, sys
from dbos import DBOS
from orchestrator.config import Settings
from orchestrator.durable import APP_NAME, FrontFeed, WorkerHost, workflow_id, workflow_version
from orchestrator.log import open_log
from orchestrator.models import DebateSpec
from orchestrator.providers import ProviderRegistry

async def main(base_url, db_url, executor, spec_json, request_key):
    # the log and, unless db_url names it, the workflow database come from the environment, as in a deployment
    settings = Settings(_env_file=None, OPENAI_API_KEY="sk-test-secret-0123456789", OPENAI_BASE_URL=base_url,
                        DEBATE_MAX_RETRIES=0, DEBATE_CALL_TIMEOUT=20)
    registry = ProviderRegistry(settings)
    spec = DebateSpec.model_validate_json(spec_json)
    async with open_log(settings.debate_database_url or settings.debate_db) as store:
        host = WorkerHost(settings, store, registry, executor_id=executor, db_url=db_url or None, concurrency=4)
        await host.start()
        if request_key:
            feed = await FrontFeed.connect(host.db_url, application_name=APP_NAME,
                                           application_version=workflow_version())
            await feed.enqueue(spec, request_key)
            await feed.close()
        handle = await DBOS.retrieve_workflow_async(workflow_id(spec.id))
        print("launched", flush=True)
        result = await handle.get_result(polling_interval_sec=0.05)
        print("done " + json.dumps(result), flush=True)
        await host.stop()
    await registry.aclose()

asyncio.run(main(*sys.argv[1:]))
"""


async def spawn_worker(
    srv: FakeLLMServer,
    log: LogBackend,
    backend: DurableBackend,
    spec: DebateSpec,
    request_key: str = "",
    *,
    executor: str = EXECUTOR,
) -> asyncio.subprocess.Process:
    """A worker process that enqueues `spec` when given a request key, else only recovers (`executor`'s
    unfinished debates); it prints "launched", then "done <outcome>" and exits when the debate has ended.
    Its storage comes from the environment (`backend.env(log)`), as in a deployment."""
    env = {k: v for k, v in os.environ.items() if k not in STORAGE_VARIABLES} | backend.env(log)
    proc = track(await asyncio.create_subprocess_exec(
        sys.executable, "-c", _WORKER, srv.openai_base_url, backend.host_db_url or "", executor,
        spec.model_dump_json(), request_key,
        stdout=asyncio.subprocess.PIPE, cwd=Path(__file__).parent.parent, env=env,
    ))
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), STARTUP_S)
    assert line.startswith(b"launched"), line
    return proc


async def finish(proc: asyncio.subprocess.Process) -> dict[str, Any]:
    """The outcome the worker printed when its debate ended (it exits then)."""
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 180)
    assert line.startswith(b"done "), line
    assert await asyncio.wait_for(proc.wait(), 60) == 0
    return json.loads(line[5:])
