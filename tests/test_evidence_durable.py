"""Evidence checks in the durable workflow: a worker killed with SIGKILL after a turn's citations were
checked (the checking step recorded) and while the next debater is still answering resumes without
checking them again: the cited loopback page is read once, and the verdict keeps each check once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from dbos import DBOSClient

from orchestrator.durable import APP_NAME
from orchestrator.durable.names import workflow_id
from tests.brief_sources import brief_of
from tests.debate_harness import make_spec
from tests.durable_harness import DurableBackend, finish, spawn_worker
from tests.durable_recovery_harness import kill
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.web_source import SourceServer
from tests.llm_scripts import script_judge

pytestmark = pytest.mark.slow  # processes, DBOS


async def checked_step(workflow_db: str, debate_id: str) -> None:
    """Until the workflow has a citation-checking step with its result recorded."""
    client = DBOSClient(system_database_url=workflow_db, application_name=APP_NAME)
    try:
        async with asyncio.timeout(60):
            while True:
                steps = await client.list_workflow_steps_async(workflow_id(debate_id))
                if any(s["function_name"].endswith("check_citations") and s["output"] is not None for s in steps):
                    return
                await asyncio.sleep(0.05)  # the workflow database is polled, as DBOS's own readers do
    finally:
        await asyncio.to_thread(client.destroy)


async def test_a_worker_killed_after_a_check_resumes_without_checking_again(
    llm_server: FakeLLMServer, tmp_path: Path, system_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = DurableBackend.sqlite(system_db)
    srv = llm_server
    script_judge(srv, "A")
    async with SourceServer() as web:
        web.pages["/runbook.md"] = ("text/markdown", b"# Runbook\nRestart the consumer before the producer.")
        monkeypatch.setenv("DEBATE_FETCH_ALLOW_HOSTS", web.allow_hosts)  # the worker reads its environment
        srv.add_rule(Reply(text=f'As [{web.url("/runbook.md")} "restart the consumer before the producer"] and '
                                '[S1 "one database"] say, keep it.'), lambda r: r.model == "model-a")
        held = srv.add_rule(Reply(gate=asyncio.Event()), lambda r: r.model == "model-b", times=1)
        srv.add_rule(Reply(text="The runbook is old."), lambda r: r.model == "model-b")
        brief = await brief_of(("design.md", "# Design\nWe keep one database."))
        spec = make_spec("challenge", rounds=1).model_copy(update={"brief": brief})
        log = backend.log(tmp_path)

        worker = await spawn_worker(srv, log, backend, spec, request_key="evidence-kill-1",
                                    executor="worker-evidence-1")
        await checked_step(backend.workflow_db, spec.id)
        await kill(worker)
        outcome = await finish(await spawn_worker(srv, log, backend, spec, executor="worker-evidence-1"))

        assert outcome["status"] == "completed", outcome
        assert held.used == 1  # B's first call hung until the kill: the debate was resumed, not finished
        assert [r["path"] for r in web.requests] == ["/runbook.md"]  # read once, before the kill
    (row,) = log.sql("select json from verdicts where debate_id = ?", [spec.id])
    checks = json.loads(row[0])["evidence_checks"]
    assert [(c["seat"], c["source"].endswith("/runbook.md") or c["source"], c["status"]) for c in checks] == [
        ("A", True, "verified"), ("A", "S1", "verified")]
