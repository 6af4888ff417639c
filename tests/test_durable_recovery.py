"""A worker killed with SIGKILL mid-debate and launched again with the same executor id: the debate
completes, only the model call in flight is made again, every turn is logged once, and a parallel
round gives each seat back its own recorded answer. On SQLite files, and with the log and the
workflows in Postgres (DEBATE_DATABASE_URL)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest

from orchestrator.events import TextDelta, TurnCompleted
from tests.debate_harness import make_spec
from tests.durable_harness import (
    STANCE_TOPIC,
    DurableBackend,
    StreamFollower,
    finish,
    logged_turns,
    script_stances,
    shown_texts,
    spawn_worker,
)
from tests.durable_recovery_harness import calls_made_twice, kill
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

SLOW_TEXT = " ".join(f"point{i}" for i in range(400))


async def test_a_worker_killed_mid_call_resumes_and_makes_only_that_call_again(
    llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend
) -> None:
    srv = llm_server
    script_judge(srv, "A")
    challenge = srv.add_rule(Reply(text=SLOW_TEXT, tokens_per_s=20), "model-b", times=1)  # streams for 20 s
    log = backend.log(tmp_path)
    spec = make_spec("challenge", rounds=2)

    worker = await spawn_worker(srv, log, backend, spec, request_key="trigger-1", executor="worker-kill-1")
    follower = StreamFollower(backend.workflow_db, spec.id)
    reading = asyncio.create_task(follower.run())
    first = await follower.wait_for(lambda e: isinstance(e, TextDelta) and e.seat == "B")  # mid-stream
    killed_at = await kill(worker)

    # the same executor id recovers the debate at launch
    resumed = await spawn_worker(srv, log, backend, spec, executor="worker-kill-1")
    launched_at = time.perf_counter()
    outcome = await finish(resumed)
    events = await asyncio.wait_for(reading, 30)

    assert outcome["status"] == "completed" and challenge.used == 1
    remade = [r for r in srv.requests if r.model == "model-b"][1]
    print(f"\n{backend.name}: kill -> relaunched worker up: {(launched_at - killed_at) * 1000:.0f} ms; "
          f"-> in-flight call made again: {(remade.started_at - killed_at) * 1000:.0f} ms")
    # only the call in flight was made again
    assert calls_made_twice(srv) == [("model-b", remade.prompt_text)]
    assert len(srv.requests) == 7  # 4 turns, the challenge once more, 2 judge passes
    # each turn logged once, the challenge with the text of the call that finished
    turns = logged_turns(log, spec.id)
    assert [t[:4] for t in turns] == [(1, "A", "opening", "ok"), (1, "B", "challenge", "ok"),
                                      (2, "A", "defense", "ok"), (2, "B", "follow-up", "ok")]
    challenge_text = turns[1][4]
    assert "point0" not in challenge_text and challenge_text.startswith("As model-b")
    # the stream: the killed attempt's text, then a new attempt that a reader shows instead
    attempts = list(dict.fromkeys(e.attempt for e in events if isinstance(e, TextDelta) and e.seat == "B"
                                  and e.round == 1))
    assert len(attempts) == 2 and attempts[0] == first.attempt  # type: ignore[attr-defined]
    shown = shown_texts(events)["turn:1:B:challenge"]  # the new attempt's; the closing event carries the end
    assert shown and "point0" not in shown and challenge_text.startswith(shown)
    keys = [e.key for e in events if not isinstance(e, TextDelta)]
    assert keys.count("final") == 1 and sum(isinstance(e, TurnCompleted) for e in events) == 4
    assert backend.intact(log)


async def test_a_parallel_round_replays_each_seat_its_own_answer(
    llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend
) -> None:
    srv = llm_server
    held = asyncio.Event()

    def b_opens(r: RequestRecord) -> bool:
        if r.model == "model-b" and "Round 1 of up to 3" in r.last_user:
            held.set()
            return True
        return False

    srv.add_rule(Reply(gate=asyncio.Event()), b_opens, times=1)  # B's opening hangs until the kill
    script_stances(srv)
    script_judge(srv, "A")
    log = backend.log(tmp_path)
    spec = make_spec("stances", topic=STANCE_TOPIC)

    worker = await spawn_worker(srv, log, backend, spec, request_key="trigger-2", executor="worker-kill-2")
    follower = StreamFollower(backend.workflow_db, spec.id)
    reading = asyncio.create_task(follower.run())
    await held.wait()
    await follower.wait_for(lambda e: e.key == "turn:1:A:opening:end")  # A answered and was logged
    await kill(worker)

    outcome = await finish(await spawn_worker(srv, log, backend, spec, executor="worker-kill-2"))
    await asyncio.wait_for(reading, 30)

    assert outcome["status"] == "completed", outcome
    opening = [r for r in srv.requests if "Round 1 of up to 3" in r.last_user]
    assert Counter(r.model for r in opening) == {"model-a": 1, "model-b": 2}  # A's answer was replayed
    assert calls_made_twice(srv) == [("model-b", opening[-1].prompt_text)]
    turns = {(t[0], t[1]): t for t in logged_turns(log, spec.id)}
    assert len(turns) == len(logged_turns(log, spec.id)) == 4
    for (round_no, seat), turn in turns.items():
        assert turn[3] == "ok"
        assert ("OPEN" if round_no == 1 else "REB") + f"-{seat}" in turn[4]  # each seat its own answer
    assert backend.intact(log)
