"""The names a debate's workflows are known by in DBOS, shared by the workers that run them and the
fronts that enqueue them, stop them and read their events (a front may not import the workflows' code).

A debate runs as one workflow per segment: segment 1 is the debate itself (`workflow_id`), and each
`continue` after its verdict runs segment 2, 3, … as a workflow of its own (`continuation_workflow_id`),
with its own stream of events."""

from __future__ import annotations

QUEUE = "debates"  # the queue debates are enqueued on and workers listen to
STREAM = "events"  # the stream a debate's events are written to, one `model_dump(mode="json")` each
WORKFLOW_NAME = "debate_workflow"  # the registered name of the workflow function
CONTINUATION_WORKFLOW_NAME = "debate_continuation"  # the registered name of a continuation's workflow


def workflow_id(debate_id: str) -> str:
    """A debate's workflow id: one workflow per debate, whoever enqueues it."""
    return f"debate-{debate_id}"


def continuation_workflow_id(debate_id: str, n: int) -> str:
    """The workflow of the debate's segment `n` (2, 3, …: its continuations), one per segment."""
    return f"{workflow_id(debate_id)}-c{n}"


def segment_workflow_id(debate_id: str, segment: int = 1) -> str:
    """The workflow that runs `segment` of the debate: the debate's own for 1, a continuation's after."""
    return workflow_id(debate_id) if segment <= 1 else continuation_workflow_id(debate_id, segment)
