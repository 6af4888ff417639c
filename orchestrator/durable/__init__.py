"""Durable debates: each debate a DBOS workflow whose model calls and deliveries are recorded steps, so a restart or
a kill -9 resumes it from its last step. The only package that imports dbos (read-only commands and `debate run` never
import it: it is slow to import). A process that runs debates holds a `WorkerHost` (worker.py); every process starts,
stops and follows debates through a `FrontFeed` (feed.py); a `continue` is a workflow of its own (continuation.py);
each format's step sequence is checked in per WORKFLOW_VERSION (fingerprints.py).

DBOS is used through its public API, with one exception, read-only: dbos_private.py reads many workflows' streams in
one statement for a front (stream_reads.py). The DBOS internals it uses, and the only ones (tests/test_dbos_private.py
runs each against the installed DBOS, and checks this list against the code):

    private imports: _serialization.deserialize_value, _sys_db.SystemDatabase,
        _sys_db.is_serialized_stream_closed_sentinel, _sys_db.workflow_is_active, _utils.LoopAwareEvent
    private attributes: DBOSClient _sys_db, LoopAwareEvent _waiters, LoopAwareEvent _waiters_lock
"""

from __future__ import annotations

from orchestrator.durable.config import (
    APP_NAME,
    WORKFLOW_VERSION,
    dbos_config,
    executor_id,
    prepare_system_db,
    system_db_url,
    workflow_version,
)
from orchestrator.durable.continuation import debate_continuation
from orchestrator.durable.feed import DebateNotQueued, FrontFeed
from orchestrator.durable.names import (
    CONTINUATION_WORKFLOW_NAME,
    QUEUE,
    STREAM,
    WORKFLOW_NAME,
    continuation_workflow_id,
    segment_workflow_id,
    workflow_id,
)
from orchestrator.durable.steps import LANE_SLOTS, Durable
from orchestrator.durable.worker import WorkerHost
from orchestrator.durable.workflow import debate_workflow

__all__ = [
    "APP_NAME", "CONTINUATION_WORKFLOW_NAME", "LANE_SLOTS", "QUEUE", "STREAM", "WORKFLOW_NAME", "WORKFLOW_VERSION",
    "DebateNotQueued", "Durable", "FrontFeed", "WorkerHost",
    "continuation_workflow_id", "dbos_config", "debate_continuation", "debate_workflow",
    "executor_id", "prepare_system_db", "segment_workflow_id", "system_db_url",
    "workflow_id", "workflow_version",
]
