"""Durable debates: each debate a DBOS workflow whose model calls and deliveries are recorded steps,
so a restart or a kill -9 resumes it from its last step. The only package that imports dbos
(importing it costs ~0.4 s: read-only commands and `debate run` never do).

- A process that runs debates holds a `WorkerHost` (start / stop): it launches DBOS with its executor
  id (`executor_id("serve")`, `executor_id("worker", name)`), recovers that id's unfinished debates,
  and runs the queue QUEUE.
- In such a process, `enqueue(spec, request_key)` starts a debate (deduplicated by workflow id and
  request key) and `cancel(debate_id)` stops one.
- A front holds a `FrontFeed` (a DBOSClient, no launch): it enqueues, cancels and reads a debate's
  events from any offset, each once (`bots.thread.tail.FrontTailer` renders them).
- A `continue` after the verdict runs the debate's next segment as a workflow of its own
  (`debate_continuation`, id `continuation_workflow_id(debate_id, n)`): `FrontFeed.enqueue_continuation`,
  or `enqueue_continuation` in a worker process; its events are on its own stream (`events(…, segment=n)`).
- Every round takes the audience's notes waiting in the log as a recorded step (`LogAudience`).
- Events travel on the workflow's stream STREAM (`workflow_id(debate_id)`), one
  `event.model_dump(mode="json")` per entry, at least once: readers drop repeats by `event.key`.
- Replay rules: every format's step sequence is checked in per WORKFLOW_VERSION (fingerprints.py,
  step_fingerprints.json; tests/test_step_fingerprints.py), and DBOS's private API is used only in
  dbos_private.py (tests/test_dbos_private.py runs each call against the pinned DBOS).
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
from orchestrator.durable.continuation import debate_continuation, enqueue_continuation
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
from orchestrator.durable.workflow import cancel, debate_workflow, enqueue

__all__ = [
    "APP_NAME", "CONTINUATION_WORKFLOW_NAME", "LANE_SLOTS", "QUEUE", "STREAM", "WORKFLOW_NAME", "WORKFLOW_VERSION",
    "DebateNotQueued", "Durable", "FrontFeed", "WorkerHost",
    "cancel", "continuation_workflow_id", "dbos_config", "debate_continuation", "debate_workflow", "enqueue",
    "enqueue_continuation", "executor_id", "prepare_system_db", "segment_workflow_id", "system_db_url",
    "workflow_id", "workflow_version",
]
