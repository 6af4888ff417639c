"""The debate log: every debate, turn, verdict and vote, with full-text recall scoped per tenant.

The contract is `DebateLog` (protocol.py) and the records it takes and returns (records.py).
`open_log` is the one place that picks the implementation: SQLite (store.py) today, Postgres later.
`StoreSink` writes a debate's events to the log before any platform renders them; `to_json` /
`to_markdown` export a logged debate. Inside the package: reads.py, writes.py and search.py hold
the SQL, writer_thread.py the thread that owns the connection, schema.py the numbered migrations.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.log.export import to_json, to_markdown
from orchestrator.log.protocol import DebateLog
from orchestrator.log.records import (
    MIN_ID_PREFIX,
    AmbiguousIdError,
    DebateNotFoundError,
    DebateRecord,
    DebateSummary,
    MessageRecord,
    NoticeRecord,
    ReadOnlyLogError,
    Scope,
    SearchHit,
    StoreClosedError,
    StoreError,
    Tally,
    TurnRecord,
)
from orchestrator.log.sink import StoreSink
from orchestrator.log.store import Store
from orchestrator.log.writes import INTERRUPTED_ERROR

__all__ = [
    "INTERRUPTED_ERROR", "MIN_ID_PREFIX", "AmbiguousIdError", "DebateLog", "DebateNotFoundError", "DebateRecord",
    "DebateSummary", "MessageRecord", "NoticeRecord", "ReadOnlyLogError", "Scope", "SearchHit", "Store",
    "StoreClosedError", "StoreError", "StoreSink", "Tally", "TurnRecord", "open_log", "to_json", "to_markdown",
]


def open_log(path: str | Path, *, runner: str | None = None, readonly: bool = False) -> DebateLog:
    """The log at `path` (not started yet: `await log.start()` or `async with`)."""
    return Store(path, runner=runner, readonly=readonly)
