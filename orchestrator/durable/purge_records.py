"""The workflow engine's records of purged debates: each segment's workflow (its inputs, steps, outputs and
streams, which hold the debate's text and ids) cancelled or deleted through DBOS's public client
(`cancel_workflow_async`, `delete_workflows_async` with the workflows they started)."""

from __future__ import annotations

from collections.abc import Sequence

from dbos import DBOS, DBOSClient

from orchestrator.durable.names import segment_workflow_id


def workflow_ids(debates: Sequence[tuple[str, int]]) -> list[str]:
    """Every segment's workflow id of each (debate id, segments it ran)."""
    return [segment_workflow_id(debate_id, n) for debate_id, segments in debates for n in range(1, segments + 1)]


class ClientRecords:
    """`orchestrator.purge.EngineRecords` over a `DBOSClient` (a front's, or one opened for `debate purge`)."""

    def __init__(self, client: DBOSClient) -> None:
        self.client = client

    async def cancel(self, debate_id: str, segment: int) -> None:
        await self.client.cancel_workflow_async(segment_workflow_id(debate_id, segment))

    async def delete(self, debates: Sequence[tuple[str, int]]) -> None:
        if ids := workflow_ids(debates):
            await self.client.delete_workflows_async(ids, delete_children=True)


class LaunchedRecords:
    """`orchestrator.purge.EngineRecords` in a process that launched DBOS (a worker): its class methods."""

    async def cancel(self, debate_id: str, segment: int) -> None:
        await DBOS.cancel_workflow_async(segment_workflow_id(debate_id, segment))

    async def delete(self, debates: Sequence[tuple[str, int]]) -> None:
        if ids := workflow_ids(debates):
            await DBOS.delete_workflows_async(ids, delete_children=True)
