"""The names a debate's workflow is known by in DBOS, shared by the workers that run it and the fronts
that enqueue it, stop it and read its events (a front may not import the workflow's code path)."""

from __future__ import annotations

QUEUE = "debates"  # the queue debates are enqueued on and workers listen to
STREAM = "events"  # the stream a debate's events are written to, one `model_dump(mode="json")` each
WORKFLOW_NAME = "debate_workflow"  # the registered name of the workflow function


def workflow_id(debate_id: str) -> str:
    """A debate's workflow id: one workflow per debate, whoever enqueues it."""
    return f"debate-{debate_id}"
