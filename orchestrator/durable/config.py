"""DBOS configuration for this program: where the workflow database lives, which version and executor.

Every process that touches the workflows (a serving process, a worker, a front's client) must agree
on the application name and version: DBOS only dequeues and recovers workflows stamped with its own
version. WORKFLOW_VERSION changes only when a debate's step sequence changes incompatibly (replaying
a workflow matches its steps by position and name); DEBATE_WORKFLOW_VERSION overrides it.

The workflow database (DBOS's "system database") is, first found: DEBATE_WORKFLOW_DB_URL; the log's
Postgres database when DEBATE_DATABASE_URL is set (DBOS keeps its tables in a schema of its own,
`dbos`, beside the log's tables in `public`, and migrates it at launch); else an SQLite file beside
the log (`<DEBATE_DB>.workflows.sqlite`, created 0600 and switched to WAL before DBOS first opens it;
nothing is prepared for Postgres).
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
from pathlib import Path
from typing import Any, Literal

from dbos import DBOSConfig

from orchestrator import tracing
from orchestrator.config import Settings
from orchestrator.private_files import create_private

log = logging.getLogger(__name__)

APP_NAME = "debate-bot"
# 7: the evidence check runs beside the next turn (a step name of its own); a council ballot that cites is checked
WORKFLOW_VERSION = "debate-7"
POLL_S = 0.1  # notification polling (a front's stream reads on SQLite)
# a worker's queue poll: each is a dequeue transaction, idle or not, and a debate waits at most this long to start
QUEUE_POLL_S = 0.25
# DBOS's thread pool (its DB calls; a worker's default executor): unbounded otherwise. More threads than this
# only contend for the GIL and the database (BENCHMARKS.md, "Overhead durable")
MAX_EXECUTOR_THREADS = 8
SQLITE_PREFIX = "sqlite:///"

Role = Literal["serve", "worker"]


def workflow_version() -> str:
    return os.environ.get("DEBATE_WORKFLOW_VERSION") or WORKFLOW_VERSION


def system_db_url(settings: Settings) -> str:
    """The workflow database: DEBATE_WORKFLOW_DB_URL, else the log's Postgres database
    (DEBATE_DATABASE_URL), else an SQLite file next to the log."""
    configured = settings.debate_workflow_db_url or settings.debate_database_url
    if configured:
        return _sqlalchemy_url(configured)
    path = Path(f"{settings.debate_db}.workflows.sqlite").resolve()
    return f"{SQLITE_PREFIX}{path}"


def _sqlalchemy_url(url: str) -> str:
    """`postgres://`, which libpq accepts, spelled `postgresql://`, which SQLAlchemy (under DBOS) requires."""
    return "postgresql://" + url.removeprefix("postgres://") if url.startswith("postgres://") else url


def sqlite_path(url: str) -> Path | None:
    """The file of an SQLite URL (`sqlite:////abs/path`), None for any other database."""
    return Path(url[len(SQLITE_PREFIX):]) if url.startswith(SQLITE_PREFIX) else None


def prepare_system_db(url: str) -> None:
    """Create an SQLite workflow database 0600 and in WAL mode, before DBOS opens it (DBOS does
    neither; WAL makes each commit cheaper, and cannot be switched on under DBOS)."""
    path = sqlite_path(url)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    create_private(path)
    with sqlite3.connect(path, timeout=5.0) as db:
        (mode,) = db.execute("pragma journal_mode").fetchone()
        if mode.lower() != "wal":
            try:
                db.execute("pragma journal_mode=wal")
            except sqlite3.OperationalError as exc:  # another process has it open: it keeps its mode
                log.warning("workflow database %s stays in %s mode: %s", path, mode, exc)
    db.close()


class _WalConnection(sqlite3.Connection):
    """A connection of DBOS's to an SQLite workflow database, in WAL mode with synchronous=NORMAL, as
    the debate log: a commit survives the process's death (kill -9), and only a power cut may take the
    last ones back. With the default (FULL) every commit waits for an fsync, and a worker commits a stream
    write and two step records per model call or more."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.execute("PRAGMA synchronous=NORMAL")


def executor_id(role: Role, name: str | None = None) -> str:
    """`serve-<host>` for a serving process, `worker-<name>` (default: the host) for a worker. It must
    be unique among live processes and stable across restarts: a process recovers, at launch, the
    unfinished workflows of its own executor id."""
    if role == "serve":
        return f"serve-{name or socket.gethostname()}"
    return f"worker-{name or socket.gethostname()}"


def _not_about_otlp_logs(record: logging.LogRecord) -> bool:
    return "logger provider not set" not in record.getMessage()


def dbos_config(url: str, executor: str) -> DBOSConfig:
    """With this process tracing (orchestrator/tracing.py), DBOS's workflow and step spans go to the same
    collector: DBOS exports through the tracer provider already set when given no endpoint of its own.
    Its logs stay ours (stderr): its warning that no OTLP log exporter is set is dropped."""
    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": url,
        "executor_id": executor,
        "application_version": workflow_version(),
        "log_level": "WARNING",
        "notification_listener_polling_interval_sec": POLL_S,
        "max_executor_threads": MAX_EXECUTOR_THREADS,
    }
    if sqlite_path(url) is None:
        # no ping before each checkout: on Postgres it is a round trip per step check, record and stream
        # write. A connection the server dropped fails when used, and DBOS's retry takes a fresh one
        # (tests/test_dbos_cut_connections.py)
        config["db_engine_kwargs"] = {"pool_pre_ping": False}
    if sqlite_path(url) is not None:
        # no ping before each use of a pooled connection (DBOS's default, for a server that may have dropped it):
        # a file's connection cannot go stale, and a worker checks one out several times per model call
        config["db_engine_kwargs"] = {"connect_args": {"factory": _WalConnection}, "pool_pre_ping": False}
    if tracing.enabled():
        config["enable_otlp"] = True
        logging.getLogger("dbos").addFilter(_not_about_otlp_logs)  # the same function: added once
    return config
