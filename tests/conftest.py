"""Shared fixtures: loopback protocol peers and fake tools; the fast lane's guard.

`make test-fast` runs the tests marked neither `slow` nor `postgres` with DEBATE_FAST_LANE=1: there,
starting a subprocess (a `debate` process, Postgres, a browser, a CLI tool) or launching DBOS fails the
test at once, saying to mark it `slow`, so the lane stays what it promises as tests are added.

`make test` hands xdist the heaviest modules first (HEAVIEST_FIRST, `--no-loadscope-reorder`): its own order
puts the modules with most tests first, which left the two-minute real-model module to start last.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing.util
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dbos import DBOS

from orchestrator.log.postgres.store import PostgresLog
from tests.durable_harness import BACKENDS, DurableBackend, durable_backend, postgres_backend_for, reap_workers
from tests.fakes.llm_server import FakeLLMServer
from tests.log_backends import LogBackend
from tests.postgres_server import PostgresServer, running_server

# The modules that take longest on a whole run (their tests' seconds summed, longest first), started first so
# none of them is the run's last; a stale list only costs time.
HEAVIEST_FIRST = ("test_real_model", "test_readme_commands", "test_cli_team", "test_cli", "test_feed",
                  "test_team_durable", "test_durable_recovery", "test_purge_cli", "test_tracing",
                  "test_log_outage_durable", "test_quotas", "test_discord_tenancy", "test_durable_serve",
                  "test_discord_review", "test_usage_cli", "test_council_chat", "test_log_readers", "test_serve")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The heaviest modules first, the rest in their own order (sorted() keeps it)."""
    rank = {name: i for i, name in enumerate(HEAVIEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))

CLI_BIN = Path(__file__).parent / "fakes" / "cli_bin"
FAST_LANE = os.environ.get("DEBATE_FAST_LANE") == "1"


class NotForTheFastLane(RuntimeError):
    """A test in the fast lane started what the lane leaves out: mark the test (or its module) `slow`."""


@pytest.fixture(scope="session", autouse=True)
def _fast_lane_guard() -> Iterator[None]:
    """In the fast lane, a test (or a fixture it needs) that starts a process or launches DBOS fails."""
    if not FAST_LANE:
        yield
        return

    def refuse(what: str) -> Callable[..., Any]:
        def refused(*_args: Any, **_kwargs: Any) -> Any:
            raise NotForTheFastLane(f"{what} in the fast lane: mark this test `@pytest.mark.slow`")
        return refused

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "_execute_child", refuse("a subprocess"))
        patch.setattr(multiprocessing.util, "spawnv_passfds", refuse("a child process"))
        patch.setattr(os, "fork", refuse("a fork"))
        patch.setattr(DBOS, "launch", refuse("DBOS.launch"))
        yield


@pytest.fixture(autouse=True)
def _thawed_heap() -> Iterator[None]:
    """A worker started in this process freezes the heap (orchestrator/heap.py): each test starts thawed,
    so what one test leaves behind is collected as usual, at the collector's usual thresholds."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.fixture
async def llm_server() -> AsyncIterator[FakeLLMServer]:
    """An OpenAI-/Anthropic-compatible server on 127.0.0.1 (openai_base_url, anthropic_base_url)."""
    async with FakeLLMServer() as server:
        try:
            yield server
        finally:
            await reap_workers()  # before the server goes: no worker left calling it


@pytest.fixture
def fake_cli_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the fake claude/gemini/codex/opencode/copilot executables first on PATH."""
    # The fakes start with `#!/usr/bin/env python3`: let that find this interpreter directly
    # rather than through a slow version-manager shim.
    python_bin = Path(sys.executable).parent
    path = os.pathsep.join([str(CLI_BIN), str(python_bin), os.environ.get("PATH", "")])
    monkeypatch.setenv("PATH", path)
    for name in list(os.environ):
        if name.startswith(("DEBATE_CLI_", "FAKE_CLI_")):
            monkeypatch.delenv(name)
    return CLI_BIN


# -- the debate log on each backend -----------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the whole session (tests/postgres_server.py)."""
    yield from running_server()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database of its own for one test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"create database {name}")
    yield postgres_server.url(name)
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"drop database if exists {name} with (force)")


@pytest.fixture
def postgres_log_url(postgres_url: str) -> str:
    """`postgres_url` with the log's schema in it (every migration applied), and no rows."""
    async def migrate() -> None:
        async with PostgresLog(postgres_url):
            pass

    asyncio.run(migrate())
    return postgres_url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def log_backend(request: pytest.FixtureRequest, tmp_path: Path) -> LogBackend:
    """Each log test runs on SQLite (a file in tmp_path) and on Postgres (a database of its own)."""
    if request.param == "sqlite":
        return LogBackend("sqlite", str(tmp_path / "log.db"))
    return LogBackend("postgres", request.getfixturevalue("postgres_url"))


# -- durable debates: one workflow database per test module and backend -------------------------------


@pytest.fixture(scope="module")
def system_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One workflow database for the module (each test its own executor id): a queue DBOS knows
    already starts without its 1 s discovery."""
    return tmp_path_factory.mktemp("durable") / "workflows.sqlite"


@pytest.fixture(scope="module")
def postgres_backend(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer
) -> Iterator[DurableBackend]:
    yield from postgres_backend_for(tmp_path_factory, postgres_server)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> DurableBackend:
    """The durable tests' storage: SQLite files, or a database of its own on the test Postgres server."""
    return durable_backend(request)
