"""A council whose worker is killed with SIGKILL while the members rank: launched again with the same executor
id, the debate finishes cleanly, the answers are not asked for again (each member gets its own back), only
the ranking in flight is made twice, every turn is logged once and the synthesis is the verdict's
recommendation. On SQLite files, and with the log and the workflows in Postgres."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import pytest

from tests.council_scripts import SYNTHESIS, TOPIC, answer_text, is_answer, is_ranking, script_council
from tests.debate_harness import make_spec
from tests.durable_harness import DurableBackend, StreamFollower, finish, logged_turns, spawn_worker
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

MEMBERS = ("openai:member-a", "openai:member-b", "openai:member-c")


async def test_a_worker_killed_mid_ranking_finishes_the_council_cleanly(
    llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend
) -> None:
    srv = llm_server
    held = asyncio.Event()

    def a_ranks(r: RequestRecord) -> bool:
        if r.model == "member-a" and is_ranking(r):
            held.set()
            return True
        return False

    srv.add_rule(Reply(gate=asyncio.Event()), a_ranks, times=1)  # A's ballot hangs until the kill
    script_council(srv, MEMBERS, latency_s=0)
    log = backend.log(tmp_path)
    spec = make_spec("council", MEMBERS, topic=TOPIC)

    worker = await spawn_worker(srv, log, backend, spec, request_key="council-kill", executor="worker-council")
    follower = StreamFollower(backend.workflow_db, spec.id)
    reading = asyncio.create_task(follower.run())
    await held.wait()
    await follower.wait_for(lambda e: e.key == "turn:2:B:ranking:end")  # a ballot was logged before the kill
    worker.send_signal(signal.SIGKILL)
    assert await worker.wait() == -signal.SIGKILL

    outcome = await finish(await spawn_worker(srv, log, backend, spec, executor="worker-council"))
    await asyncio.wait_for(reading, 30)

    assert outcome["status"] == "completed", outcome
    assert Counter(r.model for r in srv.requests if is_answer(r)) == dict.fromkeys(
        ("member-a", "member-b", "member-c"), 1), "the answers are replayed, not asked again"
    assert Counter(r.model for r in srv.requests if is_ranking(r))["member-a"] == 2
    turns = logged_turns(log, spec.id)
    assert sorted((t[0], t[1], t[2], t[3]) for t in turns) == [
        (1, s, "answer", "ok") for s in "ABC"] + [(2, s, "ranking", "ok") for s in "ABC"]
    assert all(t[4] == answer_text(t[1]) for t in turns if t[2] == "answer"), "each member its own answer"
    (verdict,) = log.sql("select winner, recommendation from verdicts where debate_id = ?", [spec.id])
    assert tuple(verdict) == ("B", SYNTHESIS)
    assert backend.intact(log)
