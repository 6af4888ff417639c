"""A debate's continuation as a DBOS workflow: `debate_continuation(debate_id, segment)`.

A `continue` after a verdict has begun in the log already (`begin_continuation`: the debate is running
again, its segment count grown, the new facts waiting as an audience note) when this is enqueued, under
its own workflow id (`continuation_workflow_id`) and so with its own stream of events. Its first step
loads what the segment starts from (the spec, the turns so far, the latest verdict, the rounds done,
the tokens and cost spent, the notes the earlier rounds took): recorded, so a resumed continuation
starts from the same record even though the log has grown since. Then the engine's `continue_debate`
runs with the same Durable steps, audience, log sink and stream as a first segment.
"""

from __future__ import annotations

from typing import Any

from dbos import DBOS
from pydantic import BaseModel, ConfigDict

from orchestrator.durable.names import CONTINUATION_WORKFLOW_NAME
from orchestrator.durable.steps import at_each_step_end, reset_step_end
from orchestrator.durable.workflow import STREAM_PACE, StreamSink, current_runtime, settle_failure
from orchestrator.events import DebateFailed, EventBus, LogWriteFailed
from orchestrator.log import StoreSink
from orchestrator.models import DebateSpec, Interjection, Outcome, Turn, Verdict

NOT_CONTINUABLE = "Debate failed: its record has no verdict to continue from."


class SegmentStart(BaseModel):
    """What segment `segment` of a debate starts from, as the log had it when the segment began."""

    model_config = ConfigDict(frozen=True)

    spec: DebateSpec
    history: tuple[Turn, ...]
    previous: Verdict
    rounds_done: int
    carried: tuple[int, int, float | None]  # input tokens, output tokens, cost (None: unknown) so far
    earlier_notes: tuple[Interjection, ...]  # the notes earlier rounds took (their prompts quote them again)


async def load_segment(debate_id: str) -> SegmentStart | None:
    """The debate's record as a continuation needs it; None when there is nothing to continue from."""
    record = await current_runtime().log.get_debate(debate_id)
    if record is None or record.spec is None or record.verdict is None:
        return None
    history = tuple(Turn.model_validate(t.model_dump(exclude={"id", "cost_usd"})) for t in record.turns)
    return SegmentStart(
        spec=record.spec, history=history, previous=record.verdict, rounds_done=record.rounds_completed,
        carried=(record.input_tokens, record.output_tokens, record.cost_usd),
        earlier_notes=tuple(n for n in record.interjections if n.round is not None),
    )


@DBOS.workflow(name=CONTINUATION_WORKFLOW_NAME)
async def debate_continuation(debate_id: str, segment: int) -> dict[str, Any]:
    """Run segment `segment` (2, 3, …) of a completed debate; returns its Outcome as JSON."""
    runtime = current_runtime()
    stream = StreamSink()
    bus = EventBus([stream], log=StoreSink(runtime.log))
    ending = at_each_step_end(stream.step_ended)
    try:
        start = await runtime.steps.call(load_segment, debate_id)
        if start is None:
            outcome = Outcome(status="failed", error=NOT_CONTINUABLE)
            await runtime.steps.call(bus.emit, DebateFailed(debate_id=debate_id, outcome=outcome))
        else:
            outcome = await runtime.engine.continue_debate(
                start.spec, segment=segment, history=list(start.history), previous=start.previous,
                rounds_done=start.rounds_done, carried=start.carried, bus=bus, steps=runtime.steps,
                audience=runtime.audience, earlier_notes=start.earlier_notes, pace=STREAM_PACE,
            )
        await runtime.steps.flush()
    except LogWriteFailed:
        outcome = await settle_failure(runtime, debate_id, bus)
    finally:
        reset_step_end(ending)
    return (bus.failure or outcome).model_dump(mode="json")
