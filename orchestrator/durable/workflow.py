"""A debate as a DBOS workflow, the queue it is started through, and the stream its events travel on.

`debate_workflow` runs the engine with `Durable` steps (steps.py): every model call is a recorded step, so a debate
resumed after a crash re-runs only the call that was in flight. Its events go to the log and to the workflow's DBOS
stream, which the fronts read (stream_sink.py, feed.py). Debates are started and stopped through `FrontFeed`
(feed.py), from any process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbos import DBOS

from orchestrator.debate.audience import Audience
from orchestrator.debate.deltas import TextPace
from orchestrator.debate.engine import Engine
from orchestrator.durable.config import QUEUE_POLL_S
from orchestrator.durable.names import QUEUE, STREAM, WORKFLOW_NAME, workflow_id
from orchestrator.durable.steps import Durable, at_each_step_end, reset_step_end
from orchestrator.durable.stream_sink import UNSHOWN, StreamSink
from orchestrator.events import LOG_WRITE_FAILED, EventBus, LogWriteFailed, log_failure
from orchestrator.log import DebateLog, StoreSink
from orchestrator.models import DebateSpec, Outcome

__all__ = ["QUEUE", "STREAM", "UNSHOWN", "WORKFLOW_NAME", "Runtime", "StreamSink", "debate_workflow",
           "install_runtime", "register_queue", "settle_failure", "workflow_id"]

# A durable stream's text: its first write when it has a phrase to show (the front's first post), then a
# write a second at most (a thread shows about an edit a second), and its end only in the turn's closing
# event: each write costs the worker a transaction.
STREAM_PACE = TextPace(interval=1.0, tail=False, first_words=6, first_wait=0.5)


@dataclass
class Runtime:
    """What the debate workflows of this process run with. It cannot travel in a workflow's input: the
    WorkerHost (worker.py) installs it (`install_runtime`) before DBOS launches."""

    engine: Engine
    log: DebateLog
    steps: Durable
    # where each round's audience notes come from (the log's, on a worker); a round takes them as one recorded
    # step, so a resumed debate gets back the notes it took
    audience: Audience | None = None


_runtime: Runtime | None = None


def install_runtime(runtime: Runtime | None) -> None:
    global _runtime
    _runtime = runtime


def current_runtime() -> Runtime:
    if _runtime is None:
        raise RuntimeError("no debate runtime in this process: start a WorkerHost before DBOS runs debate workflows")
    return _runtime


@DBOS.workflow(name=WORKFLOW_NAME)
async def debate_workflow(spec_json: str) -> dict[str, Any]:
    """Run one debate to its end; returns its Outcome as JSON. Every event is delivered inside a step (its own,
    or the next step's); the bus writes it to the log (idempotent writes: a step may run twice) and then, unless
    no thread shows it (`UNSHOWN`), to the stream STREAM as `event.model_dump(mode="json")`, and a reader drops
    what it has seen by `event.key` (feed.py's `Seen`). A continuation after the verdict is a workflow of its
    own (continuation.py)."""
    runtime = current_runtime()
    spec = DebateSpec.model_validate_json(spec_json)
    stream = StreamSink()
    bus = EventBus([stream], log=StoreSink(runtime.log))
    ending = at_each_step_end(stream.step_ended)
    try:
        outcome = await runtime.engine.run(spec, bus, steps=runtime.steps, audience=runtime.audience,
                                           pace=STREAM_PACE)
        await runtime.steps.flush()  # nothing, unless a path ended without its closing step
    except LogWriteFailed:
        outcome = await settle_failure(runtime, spec.id, bus)
    finally:
        reset_step_end(ending)
    return outcome.model_dump(mode="json")


async def settle_failure(runtime: Runtime, debate_id: str, bus: EventBus) -> Outcome:
    """The log stopped the debate: its failure is written to the log as a step that retries until the
    log accepts it. The workflow stays pending until then, so a process that dies meanwhile settles it
    when DBOS recovers the workflow at its next launch. (Replayed, the bus never saw the failure: the
    recorded step that raised LogWriteFailed is all there is, so the outcome is rebuilt.)"""
    outcome = bus.failure or Outcome(status="failed", error=LOG_WRITE_FAILED)
    if not bus.failure_logged:
        await runtime.steps.call(record_failure, debate_id, outcome.model_dump_json())
    return outcome


async def record_failure(debate_id: str, outcome_json: str) -> None:
    """The step: the debate's failure, written through the log sink until the log accepts it."""
    await log_failure(StoreSink(current_runtime().log), debate_id, Outcome.model_validate_json(outcome_json))


async def register_queue(concurrency: int) -> None:
    """Create or update the debates queue (after launch): at most `concurrency` debates at once in this process."""
    await DBOS.register_queue_async(QUEUE, worker_concurrency=concurrency, polling_interval_sec=QUEUE_POLL_S)
