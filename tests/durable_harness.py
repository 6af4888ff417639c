"""Durable debates under test: a WorkerHost in this process, or a worker in a real subprocess that a
test can SIGKILL and launch again, both against the loopback LLM server and real SQLite files."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from dbos import DBOSClient
from pydantic import TypeAdapter

from orchestrator.durable import APP_NAME, STREAM, WorkerHost, workflow_id
from orchestrator.events import Event, EventBase, TextDelta
from orchestrator.log import Store
from orchestrator.models import DebateSpec
from orchestrator.providers import ProviderRegistry
from tests.debate_harness import settings_for
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord

EXECUTOR = "worker-test"
STANCE_TOPIC = "Should a small team write its backend in a statically typed language?"
STANCES = (
    "Static typing lowers the defect rate enough to pay for itself within a year.",
    "Dynamic typing with strict tests ships features faster at equal quality.",
)
_EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def db_url(path: Path) -> str:
    return f"sqlite:///{path}"


@asynccontextmanager
async def worker_host(srv: FakeLLMServer, log_path: Path, system_db: Path) -> AsyncIterator[WorkerHost]:
    """A launched WorkerHost in this process (DBOS is a process-wide singleton: one at a time)."""
    settings = settings_for(srv)
    registry = ProviderRegistry(settings)
    try:
        async with Store(log_path) as store:
            host = WorkerHost(settings, store, registry, executor_id=EXECUTOR, concurrency=4,
                              db_url=db_url(system_db))
            await host.start()
            try:
                yield host
            finally:
                await host.stop(grace_s=5.0)
    finally:
        await registry.aclose()


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


def logged_turns(log_path: Path, debate_id: str) -> list[tuple[int, str, str, str, str]]:
    """(round, seat, kind, status, text) of every logged turn, in the order they were written."""
    with sqlite3.connect(f"file:{log_path}?mode=ro", uri=True) as db:
        rows = db.execute("select round, seat, kind, status, text from turns where debate_id = ? order by id",
                          [debate_id]).fetchall()
    return [tuple(r) for r in rows]


def logged_notices(log_path: Path, debate_id: str) -> list[tuple[str, str]]:
    with sqlite3.connect(f"file:{log_path}?mode=ro", uri=True) as db:
        rows = db.execute("select level, text from notices where debate_id = ? order by id", [debate_id]).fetchall()
    return [tuple(r) for r in rows]


def integrity(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("pragma integrity_check").fetchone()[0]


class StreamFollower:
    """Reads a debate's stream as a front would (a DBOSClient, no launch) until the workflow ends;
    `events` holds every entry as written, repeats included."""

    def __init__(self, system_db: Path, debate_id: str) -> None:
        self.system_db = system_db
        self.debate_id = debate_id
        self.events: list[EventBase] = []
        self._changed = asyncio.Condition()

    async def run(self) -> list[EventBase]:
        client = DBOSClient(system_database_url=db_url(self.system_db), application_name=APP_NAME)
        try:
            async for value in client.read_stream_async(workflow_id(self.debate_id), STREAM,
                                                        polling_interval_sec=0.05):
                async with self._changed:
                    self.events.append(_EVENT.validate_python(value))
                    self._changed.notify_all()
        finally:
            await asyncio.to_thread(client.destroy)
        return self.events

    async def wait_for(self, predicate: Callable[[EventBase], bool]) -> EventBase:
        async with self._changed:
            await self._changed.wait_for(lambda: any(predicate(e) for e in self.events))
        return next(e for e in self.events if predicate(e))


async def read_events(system_db: Path, debate_id: str) -> list[EventBase]:
    """Every entry of the debate's stream, as written (repeats included), until the workflow ends."""
    return await StreamFollower(system_db, debate_id).run()


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

_WORKER = """
import asyncio, json, sys
from dbos import DBOS
from orchestrator.config import Settings
from orchestrator.durable import WorkerHost, enqueue, workflow_id
from orchestrator.log import Store
from orchestrator.models import DebateSpec
from orchestrator.providers import ProviderRegistry

async def main(base_url, log_path, db_url, executor, spec_json, request_key):
    settings = Settings(_env_file=None, OPENAI_API_KEY="sk-test-secret-0123456789", OPENAI_BASE_URL=base_url,
                        DEBATE_MAX_RETRIES=0, DEBATE_CALL_TIMEOUT=20)
    registry = ProviderRegistry(settings)
    spec = DebateSpec.model_validate_json(spec_json)
    async with Store(log_path) as store:
        host = WorkerHost(settings, store, registry, executor_id=executor, db_url=db_url, concurrency=4)
        await host.start()
        if request_key:
            handle = await enqueue(spec, request_key)
        else:
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
    log_path: Path,
    system_db: Path,
    spec: DebateSpec,
    request_key: str = "",
    *,
    executor: str = EXECUTOR,
) -> asyncio.subprocess.Process:
    """A worker process that enqueues `spec` when given a request key, else only recovers (`executor`'s
    unfinished debates); it prints "launched", then "done <outcome>" and exits when the debate has ended."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _WORKER, srv.openai_base_url, str(log_path), db_url(system_db), executor,
        spec.model_dump_json(), request_key,
        stdout=asyncio.subprocess.PIPE, cwd=Path(__file__).parent.parent,
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line.startswith(b"launched"), line
    return proc


async def finish(proc: asyncio.subprocess.Process) -> dict[str, Any]:
    """The outcome the worker printed when its debate ended (it exits then)."""
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert line.startswith(b"done "), line
    assert await asyncio.wait_for(proc.wait(), 30) == 0
    return json.loads(line[5:])
