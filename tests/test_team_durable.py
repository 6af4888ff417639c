"""The team in the loop, durably: an audience note and a continuation survive a worker killed with SIGKILL
and launched again, and a front renders a continuation into the debate's own thread.

- An interjection stored while a debate runs is taken when the next round starts, as a recorded step:
  a worker killed in that round resumes with the same notes (a note stored while it was down waits),
  and nothing is logged or streamed twice.
- A `continue` runs as a workflow of its own, with its own stream; killed mid-round, it resumes, ends
  with verdict 2 in the log and exactly one DebateFinished on its stream.
- The front follows the continuation into the same Slack thread (the real Slack Web API peer): the
  notes and the new verdict are new messages, the first verdict stays, nothing is posted twice, and a
  front restarted mid-continuation picks the debate up in its last segment.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bots.loop import Asker, interject, prepare_continuation, start_continuation
from bots.slack.surface import SlackThread
from bots.thread import ROOT, VERDICT, Pacer, ThreadSink, interjection_key, turn_key, verdict_key
from bots.thread.keys import root_key
from bots.thread.tail import FrontTailer
from orchestrator.app import Core
from orchestrator.config import Settings, load_settings
from orchestrator.debate.engine import Engine
from orchestrator.durable import APP_NAME, FrontFeed, continuation_workflow_id, workflow_version
from orchestrator.events import (
    DebateContinued,
    DebateFinished,
    EventBase,
    Interjected,
    RoundCompleted,
    RoundStarted,
    TextDelta,
    TurnCompleted,
    TurnStarted,
    VerdictReached,
)
from orchestrator.log import DebateLog, DebateRecord, Scope, Store
from orchestrator.models import DebateSpec, Interjection, Outcome, Turn, Verdict
from orchestrator.providers import ProviderRegistry
from tests.debate_harness import make_spec, settings_for
from tests.durable_harness import (
    STARTUP_S,
    STORAGE_VARIABLES,
    DurableBackend,
    StreamFollower,
    finish,
    logged_turns,
    spawn_worker,
    track,
)
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.fakes.slack_api import SlackAPIPeer
from tests.llm_scripts import is_judge, script_judge
from tests.log_backends import LogBackend
from tests.thread_resume_harness import CHANNEL, FAST_SLACK, VERDICT_TEXT, at_least_once, debate_events, spec_for

NOTE = "Our p99 budget is 50 ms, measured at the edge last quarter."
LATE_NOTE = "Sent while the worker was down: this must wait for a round that never comes."
FACTS = "New fact: the cache vendor doubled its price in March."
WORKSPACE = "T1"
ASKER = Asker(platform="slack", user="U1", author="Dana", scope=Scope(platform="slack", workspace=WORKSPACE,
                                                                      channel=CHANNEL))


def chat_spec_of(spec: DebateSpec) -> DebateSpec:
    """The spec as a Slack front logs it: a channel and workspace an asker there can see."""
    return spec.model_copy(update={"platform": "slack", "workspace": WORKSPACE, "channel": CHANNEL})


def core_for(settings: Settings, store: DebateLog, feed: Any = None) -> Core:
    registry = ProviderRegistry(settings)
    return Core(settings=settings, store=store, registry=registry, engine=Engine(registry, settings), feed=feed)


async def kill(proc: asyncio.subprocess.Process) -> None:
    proc.send_signal(signal.SIGKILL)
    assert await proc.wait() == -signal.SIGKILL


async def step_recorded(feed: FrontFeed, workflow: str, name: str, within: float = 30.0) -> None:
    """Until the workflow has a finished step called `name` (DBOS says nothing when it records one)."""
    deadline = time.monotonic() + within
    while not any(step["function_name"].endswith(name) and step["completed_at_epoch_ms"]
                  for step in await feed.client.list_workflow_steps_async(workflow)):
        assert time.monotonic() < deadline, f"no {name} step of {workflow} was recorded"
        await asyncio.sleep(0.05)


def made_twice(srv: FakeLLMServer) -> list[tuple[str, str]]:
    made = Counter((r.model, r.prompt_text) for r in srv.requests)
    return [call for call, times in made.items() if times > 1]


def hold(srv: FakeLLMServer, match: Any) -> asyncio.Event:
    """The first request `match` fits hangs until its worker is killed; the returned event is set then."""
    held = asyncio.Event()

    def fits(record: RequestRecord) -> bool:
        if match(record):
            held.set()
            return True
        return False

    srv.add_rule(Reply(gate=asyncio.Event()), fits, times=1)
    return held


# -- an interjection survives a restart mid-round ---------------------------------------------------


@pytest.mark.slow
async def test_an_interjection_is_taken_at_the_next_round_and_a_restart_mid_round_takes_the_same_notes(
    llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend
) -> None:
    srv = llm_server
    script_judge(srv, "A")
    b_waits, release_b = asyncio.Event(), asyncio.Event()

    def b_opens(record: RequestRecord) -> bool:
        if record.model == "model-b" and not b_waits.is_set():
            b_waits.set()
            return True
        return False

    srv.add_rule(Reply(gate=release_b), b_opens, times=1)  # round 1 waits while the note is sent
    held = hold(srv, lambda r: r.model == "model-a" and NOTE in r.last_user)  # A's round-2 defense
    log = backend.log(tmp_path)
    spec = chat_spec_of(make_spec("challenge", rounds=2))

    worker = await spawn_worker(srv, log, backend, spec, request_key="team-1", executor="worker-team-1")
    follower = StreamFollower(backend.workflow_db, spec.id)
    reading = asyncio.create_task(follower.run())
    settings = settings_for(srv, env=backend.env(log))
    async with log.open() as store:
        core = core_for(settings, store)
        await b_waits.wait()
        note = await interject(core, spec.id, NOTE, ASKER)  # round 1 is under way: it waits for round 2
        release_b.set()
        await held.wait()
        await follower.wait_for(lambda e: isinstance(e, Interjected))
        await kill(worker)
        late = await interject(core, spec.id, LATE_NOTE, ASKER)  # the debate is still running in the log

        outcome = await finish(await spawn_worker(srv, log, backend, spec, executor="worker-team-1"))
        events = await asyncio.wait_for(reading, 30)
        stored = {n.id: n for n in await store.interjections(spec.id)}

    assert outcome["status"] == "completed", outcome
    # the round-2 take was replayed from its record: the note sent while the worker was down still waits
    assert stored[note.id].round == 2 and stored[late.id].round is None
    remade = [r for r in srv.requests if r.model == "model-a" and NOTE in r.last_user]
    assert len(remade) == 2 and made_twice(srv) == [("model-a", remade[0].prompt_text)]
    round_one = [r for r in srv.requests if not is_judge(r)][:2]
    assert not any(NOTE in r.prompt_text for r in round_one)  # sent after round 1 began: it reached round 2
    later = [r for r in srv.requests if r not in round_one]
    assert later and all(NOTE in r.prompt_text and LATE_NOTE not in r.prompt_text for r in later)
    assert any(is_judge(r) for r in later)  # the judge reads the note too
    # nothing twice: one Interjected on the stream, each turn logged once
    shown = [e for e in events if isinstance(e, Interjected)]
    assert len(shown) == 1 and shown[0].interjection.id == note.id and shown[0].interjection.round == 2
    assert shown[0].interjection.author == "Dana"
    assert [t[:4] for t in logged_turns(log, spec.id)] == [(1, "A", "opening", "ok"), (1, "B", "challenge", "ok"),
                                                          (2, "A", "defense", "ok"), (2, "B", "follow-up", "ok")]
    assert backend.intact(log)


# -- a continuation survives a restart --------------------------------------------------------------

_CONTINUATION_WORKER = """
import asyncio, json, sys
from dbos import DBOS
from orchestrator.config import Settings
from orchestrator.durable import WorkerHost, continuation_workflow_id
from orchestrator.log import open_log
from orchestrator.providers import ProviderRegistry

async def main(base_url, db_url, executor, debate_id, segment):
    settings = Settings(_env_file=None, OPENAI_API_KEY="sk-test-secret-0123456789", OPENAI_BASE_URL=base_url,
                        DEBATE_MAX_RETRIES=0, DEBATE_CALL_TIMEOUT=20)
    registry = ProviderRegistry(settings)
    async with open_log(settings.debate_database_url or settings.debate_db) as store:
        host = WorkerHost(settings, store, registry, executor_id=executor, db_url=db_url or None, concurrency=4)
        await host.start()
        # queued by the test as a front does, or launched again: DBOS recovered what this executor left unfinished
        handle = await DBOS.retrieve_workflow_async(continuation_workflow_id(debate_id, int(segment)))
        print("launched", flush=True)
        result = await handle.get_result(polling_interval_sec=0.05)
        print("done " + json.dumps(result), flush=True)
        await host.stop()
    await registry.aclose()

asyncio.run(main(*sys.argv[1:]))
"""


async def spawn_continuation(srv: FakeLLMServer, log: LogBackend, backend: DurableBackend, debate_id: str,
                             segment: int, *, executor: str) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if k not in STORAGE_VARIABLES} | backend.env(log)
    proc = track(await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CONTINUATION_WORKER, srv.openai_base_url, backend.host_db_url or "", executor,
        debate_id, str(segment),
        stdout=asyncio.subprocess.PIPE, cwd=Path(__file__).parent.parent, env=env,
    ))
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), STARTUP_S)
    assert line.startswith(b"launched"), line
    return proc


@pytest.mark.slow
async def test_a_continuation_runs_as_its_own_workflow_and_survives_a_restart(
    llm_server: FakeLLMServer, tmp_path: Path, backend: DurableBackend
) -> None:
    srv = llm_server
    script_judge(srv, "A")
    log = backend.log(tmp_path)
    spec = chat_spec_of(make_spec("challenge", rounds=1))
    first = await finish(await spawn_worker(srv, log, backend, spec, request_key="team-2", executor="worker-team-2"))
    assert first["status"] == "completed"

    held = hold(srv, lambda r: r.model == "model-a" and FACTS in r.last_user)  # A's continued turn
    settings = settings_for(srv, env=backend.env(log))
    feed = await FrontFeed.connect(backend.workflow_db, application_name=APP_NAME,
                                   application_version=workflow_version(), poll_seconds=0.05)
    async with log.open() as store:
        record, segment = await prepare_continuation(core_for(settings, store), spec.id, FACTS, ASKER)
        assert (record.status, segment) == ("completed", 2)
        # the front queues it; a repeat of the request starts nothing
        assert await feed.enqueue_continuation(spec.id, 2, "continue-1") == 2
        assert await feed.enqueue_continuation(spec.id, 3, "continue-1") == 2
        worker = await spawn_continuation(srv, log, backend, spec.id, 2, executor="worker-team-3")
        # the continuation's own stream (StreamFollower reads `debate-<id>`: its id is `debate-<id>-c2`)
        assert continuation_workflow_id(spec.id, 2) == f"debate-{spec.id}-c2"
        follower = StreamFollower(backend.workflow_db, f"{spec.id}-c2")
        reading = asyncio.create_task(follower.run())
        await held.wait()
        await follower.wait_for(lambda e: isinstance(e, TurnCompleted) and e.turn.seat == "B")
        # a turn's events go out inside its step, and the step is recorded just after: wait for that too
        await step_recorded(feed, continuation_workflow_id(spec.id, 2), "model_turn")
        await kill(worker)
        outcome = await finish(await spawn_continuation(srv, log, backend, spec.id, 2, executor="worker-team-3"))
        events = await asyncio.wait_for(reading, 30)
        continued = await store.get_debate(spec.id)
    try:
        shown = [e async for e in feed.events(spec.id, segment=2)]  # what a front reads: each event once
        first_segment = [e async for e in feed.events(spec.id)]
    finally:
        await feed.close()

    assert outcome["status"] == "completed", outcome
    assert [e.key for e in shown if not isinstance(e, TextDelta)] == list(dict.fromkeys(
        e.key for e in events if not isinstance(e, TextDelta))) and isinstance(shown[-1], DebateFinished)
    assert sum(isinstance(e, VerdictReached) for e in first_segment) == 1  # segment 1's stream is its own
    assert (outcome["rounds_completed"], outcome["rounds_planned"]) == (2, 2)
    assert outcome["input_tokens"] > first["input_tokens"]  # the whole debate's, not only the segment's
    assert continued is not None and continued.status == "completed" and continued.segment == 2
    assert len(continued.verdicts) == 2 and continued.verdict == continued.verdicts[1]
    assert continued.verdict.changed is False and continued.verdict.change_note  # A still wins
    assert sorted(t[:4] for t in logged_turns(log, spec.id)) == [  # B's continued turn was logged first
        (1, "A", "opening", "ok"), (1, "B", "challenge", "ok"),
        (2, "A", "continuation", "ok"), (2, "B", "continuation", "ok")]
    # the facts reached both sides' continued turns and the judge; only the killed call was made twice
    facts_calls = [r for r in srv.requests if FACTS in r.prompt_text]
    assert {r.model for r in facts_calls} == {"model-a", "model-b", "judge"}
    assert made_twice(srv) == [("model-a", next(r for r in facts_calls if r.model == "model-a").prompt_text)]
    # the continuation's stream: its own events, the end once
    keys = [e.key for e in events if not isinstance(e, TextDelta)]
    assert keys[0] == "continued:2" and sum(isinstance(e, DebateFinished) for e in events) == 1
    assert [e.number for e in events if isinstance(e, VerdictReached)] == [2]
    notes = [e.interjection for e in events if isinstance(e, Interjected)]
    assert [(n.kind, n.round, n.text) for n in notes] == [("facts", 2, FACTS)]
    assert not any(isinstance(e, DebateContinued) and e.segment != 2 for e in events)
    assert backend.intact(log)


# -- the front renders a continuation into the same thread ------------------------------------------


class SegmentFeed:
    """The workers' streams as a front reads them, one per segment; a segment's stream is given by the
    test (`give`) and may stop short (`upto`) as a live stream does, until `more` is set."""

    def __init__(self) -> None:
        self.streams: dict[int, list[EventBase]] = {}
        self.given: dict[int, asyncio.Event] = {}
        self.upto: dict[int, int] = {}
        self.more = asyncio.Event()
        self.asked: list[int] = []
        self.queued: list[tuple[str, int, str | None]] = []

    def give(self, segment: int, events: list[EventBase], upto: int | None = None) -> None:
        self.streams[segment] = events
        if upto is not None:
            self.upto[segment] = upto
        self.given.setdefault(segment, asyncio.Event()).set()

    async def events(self, debate_id: str, offset: int = 0, segment: int = 1) -> AsyncIterator[EventBase]:
        self.asked.append(segment)
        await self.given.setdefault(segment, asyncio.Event()).wait()
        stream = self.streams[segment]
        for index, event in enumerate(stream[offset:], start=offset):
            if index == self.upto.get(segment) and not self.more.is_set():
                await self.more.wait()
            yield event

    async def cancel(self, debate_id: str, segment: int = 1) -> None:
        raise AssertionError("nothing is stopped here")

    async def enqueue_continuation(self, debate_id: str, segment: int, request_key: str | None = None) -> int:
        self.queued.append((debate_id, segment, request_key))
        return segment


def continuation_events(spec: DebateSpec, notes: list[Interjection], verdict: Verdict) -> list[EventBase]:
    """Segment 2 as its stream has it: round 2, the notes it took, both seats' answers, verdict 2."""
    events: list[EventBase] = [DebateContinued(debate_id=spec.id, segment=2, round=2),
                               RoundStarted(debate_id=spec.id, round=2, total=2, title="Continued")]
    events += [Interjected(debate_id=spec.id, interjection=n.model_copy(update={"round": 2})) for n in notes]
    for seat in spec.seats:
        text = f"Seat {seat.label} answers the verdict: the new price changes the maths."
        events += [TurnStarted(debate_id=spec.id, round=2, seat=seat.label, role=seat.role, kind="continuation",
                               model=seat.model),
                   TextDelta(debate_id=spec.id, round=2, seat=seat.label, kind="continuation", delta=text,
                             attempt=f"{seat.label}2", offset=0),
                   TurnCompleted(debate_id=spec.id, turn=Turn(debate_id=spec.id, round=2, seat=seat.label,
                                                              role=seat.role, kind="continuation", model=seat.model,
                                                              text=text, output_tokens=20))]
    return [*events, RoundCompleted(debate_id=spec.id, round=2, total=2),
            VerdictReached(debate_id=spec.id, verdict=verdict, number=2),
            DebateFinished(debate_id=spec.id, outcome=Outcome(status="completed", rounds_completed=2,
                                                              rounds_planned=2, input_tokens=30, output_tokens=120))]


def _root_texts(peer: SlackAPIPeer, root_ts: str) -> list[str]:
    return [json.dumps(c.params.get("blocks")) for c in peer.of("chat.update") if c.params.get("ts") == root_ts]


async def test_a_continuation_is_rendered_into_the_same_thread_with_its_notes_and_a_second_verdict(
    tmp_path: Path,
) -> None:
    spec = spec_for("slack").model_copy(update={"workspace": WORKSPACE})
    new_verdict = Verdict(winner="B", reasoning="The price rise undoes A's case.",
                          recommendation="Keep the cache in-house.", changed=True,
                          change_note="The new price outweighs the latency gain.")
    feed = SegmentFeed()
    async with SlackAPIPeer() as peer, Store(tmp_path / "log.db") as store:
        core = core_for(load_settings(DEBATE_DB=str(tmp_path / "log.db")), store, feed)
        await store.create_debate(spec)
        client = AsyncWebClient(token="xoxb-test", base_url=peer.base_url)
        root_ts = str((await client.chat_postMessage(channel=CHANNEL, text=spec.topic))["ts"])

        async def reach(record: DebateRecord) -> tuple[SlackThread, Pacer]:
            assert record.channel is not None
            return SlackThread(client, record.channel, root_ts), Pacer(FAST_SLACK)

        # segment 1, as the workers logged it and the front rendered it
        first = debate_events(spec)
        feed.give(1, at_least_once(first))
        tailer = FrontTailer(feed, store, "slack", reach)
        tailer.follow(spec.id, await ThreadSink.open(SlackThread(client, CHANNEL, root_ts), Pacer(FAST_SLACK), store,
                                                     spec, root_ts))
        await store.set_verdict(spec.id, VERDICT_TEXT)
        await store.finish_debate(spec.id, first[-1].outcome)  # type: ignore[attr-defined]
        await asyncio.wait_for(tailer.idle(), 20)
        before = await store.messages(spec.id)
        assert before[ROOT].final and before[VERDICT].final
        first_verdict = peer.message(CHANNEL, before[VERDICT].message_id)

        # continue, with new facts; a note from the audience while it runs
        assert await start_continuation(core, tailer, spec.id, FACTS, ASKER, request_key="trigger-c") == 2
        assert feed.queued == [(spec.id, 2, "trigger-c")]
        note = await interject(core, spec.id, NOTE, ASKER)
        notes = sorted(await store.interjections(spec.id), key=lambda n: n.kind != "facts")
        assert [(n.kind, n.author) for n in notes] == [("facts", "Dana"), ("interjection", "Dana")]
        events = continuation_events(spec, notes, new_verdict)
        cut = next(i for i, e in enumerate(events) if isinstance(e, TurnCompleted))
        feed.give(2, at_least_once(events), upto=2 * cut)  # the front goes down mid-round
        await peer.wait_for(lambda p: any("Continued" in t for t in _root_texts(p, root_ts)))
        a_turn = turn_key(2, "A", "continuation", 0)
        await peer.wait_for(lambda p: len(p.thread(CHANNEL, root_ts)) >= len(before) + 2)  # the notes are shown
        await tailer.aclose()

        # the workers finish the continuation while no front is up; a restarted front still finds its
        # thread unfinished and resumes it in its last segment, from the start of that stream
        feed.more.set()
        await store.set_verdict(spec.id, new_verdict, number=2)
        await store.finish_debate(spec.id, events[-1].outcome)  # type: ignore[attr-defined]
        restarted = FrontTailer(feed, store, "slack", reach)
        assert await restarted.resume() == [spec.id]
        await asyncio.wait_for(restarted.idle(), 20)
        assert await restarted.resume() == []  # finished: nothing to resume any more
        after = await store.messages(spec.id)

    assert feed.asked[-1] == 2 and 1 not in feed.asked[1:]
    new_keys = {root_key(2), interjection_key(notes[0].id, 0), interjection_key(note.id, 0), a_turn,
                turn_key(2, "B", "continuation", 0), verdict_key(2)}
    assert set(after) == set(before) | new_keys
    assert all(m.final for m in after.values()), [k for k, m in after.items() if not m.final]
    thread = peer.thread(CHANNEL, root_ts)
    posts = [c for c in peer.of("chat.postMessage") if c.ok and c.params.get("thread_ts") == root_ts]
    assert len(posts) == len(thread) == len(after) - 2  # every message once (the root, twice recorded, is not)
    assert after[root_key(2)].message_id == root_ts
    # the first verdict stays as it was; the second is a message of its own
    assert after[VERDICT] == before[VERDICT]
    assert peer.message(CHANNEL, after[VERDICT].message_id).blocks == first_verdict.blocks
    second = json.dumps(peer.message(CHANNEL, after[verdict_key(2)].message_id).blocks)
    assert "Keep the cache in-house." in second and "The new price outweighs the latency gain." in second
    for key, text in ((interjection_key(notes[0].id, 0), FACTS), (interjection_key(note.id, 0), NOTE)):
        shown = peer.message(CHANNEL, after[key].message_id).text
        assert text in shown and "Dana" in shown
    # the root went back to running for the continuation, then shows its end
    assert "completed" in json.dumps(peer.message(CHANNEL, root_ts).blocks)
    assert _root_texts(peer, root_ts)[-1] == json.dumps(peer.message(CHANNEL, root_ts).blocks)
