"""The debate log: every debate, turn, verdict and vote, with full-text recall scoped per tenant.

The contract is `DebateLog` (protocol.py: every operation, once) and the records it takes and returns
(records.py). `open_log` (opening.py) is the one place that picks the database: SQLite (sqlite.py) for
a path, Postgres (postgres/) for a `postgresql://` URL (DEBATE_DATABASE_URL). `StoreSink` writes a
debate's events to the log before any platform renders them (orchestrator/export/ turns a logged debate
into JSON or Markdown); `migrate_log` (transfer.py) copies a log between SQLite and Postgres. Inside the package:
reads.py, writes.py, team.py (audience notes, continuations, channel defaults), renderers.py (leases),
purge.py (whole debates deleted, a person forgotten), audit.py (who changed what), maintenance.py (a
periodic pass's lease), workspaces.py (uninstalls waiting, orgs) and search.py hold the operations,
written once over `Conn` (dialect.py); sqlite.py and postgres/store.py are the two dialects,
writer_thread.py the thread that owns the SQLite connection, schema.py the one numbered list of migrations.
"""

from __future__ import annotations

from orchestrator.log.opening import is_postgres_url, open_log
from orchestrator.log.protocol import DebateLog
from orchestrator.log.records import (
    MIN_ID_PREFIX,
    AmbiguousIdError,
    ContinuationRefused,
    DebateNotFoundError,
    DebateRecord,
    DebateSummary,
    InterjectionRefused,
    JudgeAgreement,
    LogUnavailableError,
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
from orchestrator.log.schema import migration_names
from orchestrator.log.sink import StoreSink
from orchestrator.log.sqlite import Store
from orchestrator.log.transfer import Copied, migrate_log

__all__ = [
    "MIN_ID_PREFIX", "AmbiguousIdError", "ContinuationRefused", "Copied", "DebateLog", "DebateNotFoundError",
    "DebateRecord", "DebateSummary", "InterjectionRefused", "JudgeAgreement", "LogUnavailableError", "MessageRecord",
    "NoticeRecord",
    "ReadOnlyLogError", "Scope", "SearchHit", "Store", "StoreClosedError", "StoreError", "StoreSink", "Tally",
    "TurnRecord", "is_postgres_url", "migrate_log", "migration_names", "open_log",
]
