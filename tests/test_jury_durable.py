"""A jury in the durable workflow: its jurors' passes are parallel steps within LANE_SLOTS, and a worker
killed with SIGKILL while one juror is still judging resumes to one clean verdict, making only that
juror's call again. On SQLite files, and with the log and the workflows in Postgres."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from dbos import DBOSClient

from orchestrator.durable import APP_NAME
from orchestrator.durable.names import workflow_id
from orchestrator.models import DebateSpec
from tests.debate_harness import make_spec
from tests.durable_harness import DurableBackend, finish, logged_turns, spawn_worker
from tests.durable_recovery_harness import calls_made_twice, kill
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.judge_harness import PROMPT
from tests.jury_harness import picks

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

JURORS = ("openai:juror-one", "openai:juror-two", "openai:juror-three")  # the worker knows one provider


async def judged_steps(workflow_db: str, debate_id: str, count: int) -> None:
    """Until `count` judge calls have their results recorded in the workflow's steps."""
    client = DBOSClient(system_database_url=workflow_db, application_name=APP_NAME)
    try:
        async with asyncio.timeout(30):
            while True:
                steps = await client.list_workflow_steps_async(workflow_id(debate_id))
                done = [s for s in steps if s["function_name"].endswith("model_call") and s["output"] is not None]
                if len(done) >= count:
                    return
                await asyncio.sleep(0.05)  # the workflow database is polled, as DBOS's own readers do
    finally:
        await asyncio.to_thread(client.destroy)


async def test_a_worker_killed_mid_jury_resumes_to_one_clean_verdict(
    llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend
) -> None:
    srv = llm_server
    srv.add_rule(Reply(text="PROPOSER: adopt it; the benchmark shows 2x."), lambda r: r.model == "model-a")
    srv.add_rule(Reply(text="CHALLENGER: the benchmark is synthetic."), lambda r: r.model == "model-b")
    held = srv.add_rule(Reply(gate=asyncio.Event()), lambda r: r.model == "juror-three" and
                        "- Debater A: proposer" in r.prompt_text, times=1)  # hangs until the kill
    for juror in JURORS:
        picks(srv, juror, "challenger")
    log = backend.log(tmp_path)
    spec: DebateSpec = make_spec("challenge", rounds=1).model_copy(update={"judges": JURORS})

    worker = await spawn_worker(srv, log, backend, spec, request_key="jury-kill-1", executor="worker-jury-1")
    await judged_steps(backend.workflow_db, spec.id, 5)  # every pass but the held one is recorded
    assert held.used == 1
    await kill(worker)

    outcome = await finish(await spawn_worker(srv, log, backend, spec, executor="worker-jury-1"))

    assert outcome["status"] == "completed", outcome
    judging = [r for r in srv.requests if PROMPT in r.prompt_text]
    assert len(judging) == 7  # six passes, the held one twice
    assert [(model, text) for model, text in calls_made_twice(srv)] == [("juror-three", judging[-1].prompt_text)]
    assert [t[:4] for t in logged_turns(log, spec.id)] == [(1, "A", "opening", "ok"), (1, "B", "challenge", "ok")]
    (verdict,) = log.sql("select winner, jury_size, jury_picks from verdicts where debate_id = ?", [spec.id])
    assert verdict == ("B", 3, '["B", "B", "B"]')
    assert backend.intact(log)
