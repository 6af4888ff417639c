"""Durable debates: each debate a DBOS workflow whose model calls and deliveries are recorded steps,
so a restart or a kill -9 resumes it from its last step. The only package that imports dbos
(read-only commands and `debate run` never import it: it is slow to import).

- A process that runs debates holds a `WorkerHost` (start / stop): it launches DBOS with its executor
  id (`executor_id("serve")`, `executor_id("worker", name)`), recovers that id's unfinished debates,
  and runs the queue QUEUE.
- Every process starts, stops and follows debates through a `FrontFeed` (a DBOSClient, no launch): it
  enqueues (deduplicated by workflow id and request key), cancels, and reads a debate's events from any
  offset, each once (`bots.thread.tail.FrontTailer` renders them).
- A `continue` after the verdict runs the debate's next segment as a workflow of its own
  (`debate_continuation`, id `continuation_workflow_id(debate_id, n)`), queued by
  `FrontFeed.enqueue_continuation`; its events are on its own stream (`events(…, segment=n)`).
- Events travel on the workflow's stream STREAM (`workflow_id(debate_id)`), an entry holding one event or
  a list of them, at least once: readers drop repeats by `event.key`.
- Replay rules: every format's step sequence is checked in per WORKFLOW_VERSION (fingerprints.py,
  step_fingerprints.json; tests/test_step_fingerprints.py).

DBOS is used through its public API (`DBOS.workflow`, `DBOS.run_step_async`, `DBOS.reserve_step`,
`DBOS.write_stream_async`, queues, `DBOSClient`), with one exception, read-only: dbos_private.py reads
many workflows' streams in one statement for a front (stream_reads.py), which DBOS's public reader cannot.
The DBOS internals it uses, and the only ones in this program (tests/test_dbos_private.py runs each
against the installed DBOS, and checks these lines against the code's imports and attributes):

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
