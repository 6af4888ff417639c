"""The Postgres log when the server closes its connections (issue 57, item 18): `pg_terminate_backend` on
every connection of the log while debates run and while starts are admitted, and a real restart of the
server mid-debate, through the real engine, the loopback LLM peer and a real Postgres. Every operation
runs again on a fresh connection: no start is lost, no debate fails. A start the log cannot take for good
(the server stays away past the log's wait) is answered in Slack with one line."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import psycopg
import pytest

from orchestrator.app import LOG_UNAVAILABLE
from orchestrator.debate.engine import Engine
from orchestrator.debate.jobs import DebateJobs
from orchestrator.events import DebateFailed, EventBase, TextDelta, TurnStarted
from orchestrator.log.postgres import store as pg_store
from orchestrator.log.postgres.store import PostgresLog
from orchestrator.models import Outcome
from orchestrator.providers import ProviderRegistry
from orchestrator.quotas import Quota
from tests.debate_harness import settings_for
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge
from tests.log_outage_harness import chat_spec
from tests.postgres_server import PostgresServer, running_server

pytestmark = pytest.mark.postgres

STARTS = 22
RUN = 6  # of them, the debates run to their end while their connections are cut
MID_DEBATE_KILLS = 8
RESTARTS = 3
ROOMY = Quota(max_running=100, max_running_per_user=1)
KILL = ("select count(pg_terminate_backend(pid)) from pg_stat_activity where datname = current_database()"
        " and application_name <> 'cutter' and backend_type = 'client backend'")


def cut_connections(url: str) -> int:
    """Terminate every connection to the log's database but this one; how many there were."""
    with psycopg.connect(url, autocommit=True, application_name="cutter") as admin:
        row = admin.execute(KILL).fetchone()
    return int(row[0]) if row else 0


@dataclass
class Cutter:
    """A platform sink that cuts the log's connections after each event the log wrote (text deltas aside),
    one cut at a time, until `budget` cuts have terminated at least one connection each."""

    url: str
    budget: int
    cuts: list[int] = field(default_factory=list)  # the connections each cut that found some terminated
    events: list[EventBase] = field(default_factory=list)
    _one_at_a_time: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def handle(self, event: EventBase) -> None:
        self.events.append(event)
        if isinstance(event, TextDelta):
            return
        async with self._one_at_a_time:
            if len(self.cuts) < self.budget and (cut := await asyncio.to_thread(cut_connections, self.url)):
                self.cuts.append(cut)


def slow_replies(srv: FakeLLMServer) -> None:
    script_judge(srv, "A")
    srv.add_rule(Reply(text="Opening: the numbers favour the cache. " * 6, tokens_per_s=120), match="model-a")
    srv.add_rule(Reply(text="Rebuttal: caches hide bugs. " * 6, tokens_per_s=120), match="model-b")


async def test_connections_cut_under_starts_and_running_debates_lose_no_start_and_fail_no_debate(
    postgres_url: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=pg_store.__name__)
    async with FakeLLMServer() as srv, PostgresLog(postgres_url, runner="cli:test") as store:
        slow_replies(srv)
        settings = settings_for(srv)
        registry = ProviderRegistry(settings)
        try:
            jobs = DebateJobs(Engine(registry, settings), store)
            specs = [chat_spec(f"Does start {n} survive a cut connection?").model_copy(update={"requested_by": f"U{n}"})
                     for n in range(STARTS)]
            start_cuts = []
            for spec in specs:  # every admission finds the connections it would use terminated
                start_cuts.append(await asyncio.to_thread(cut_connections, postgres_url))
                await jobs.admit(spec, ROOMY)
            cutter = Cutter(postgres_url, MID_DEBATE_KILLS)
            outcomes = await asyncio.gather(*(jobs.start(spec, [cutter]) for spec in specs[:RUN]))
        finally:
            await registry.aclose()
        logged = {spec.id: await store.get_debate(spec.id, turns=False) for spec in specs}
        assert all(record is not None for record in logged.values())  # 0 of 22 starts lost
        assert sum(start_cuts) >= STARTS - 1  # from the second on, each found a pooled connection to cut
        assert len(cutter.cuts) == MID_DEBATE_KILLS  # 8 cuts mid-debate, each of at least one connection
        assert [o.status for o in outcomes] == ["completed"] * RUN, [o.error for o in outcomes]
        assert not [e for e in cutter.events if isinstance(e, DebateFailed)]
        for spec in specs[:RUN]:
            record = logged[spec.id]
            assert record is not None and record.status == "completed"
        assert any("was lost" in r.getMessage() for r in caplog.records)  # the retries did happen


# -- a server that restarts, and one that stays away ------------------------------------------------------


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A server of this test's own, free to be restarted and stopped."""
    yield from running_server()


def _pg_ctl(server: PostgresServer, action: str) -> None:
    """Stop the server (fast: its connections are closed), or start it again on the same port."""
    if action == "stop":
        done = server._run("pg_ctl", "-D", str(server.data), "-m", "fast", "-w", "stop")
    else:
        options = f"-h 127.0.0.1 -p {server.port} -k {server.root} -F -c max_connections=200"
        done = server._run("pg_ctl", "-D", str(server.data), "-w", "-l", str(server.root / "server.log"),
                           "-o", options, "start")
    assert done.returncode == 0, done.stderr


def _database(server: PostgresServer) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f"create database {name}")
    return server.url(name)


@dataclass
class Restarter:
    """Restarts the server as turns start, RESTARTS times, one at a time; the first time, a start is admitted
    while the server is down."""

    server: PostgresServer
    store: PostgresLog
    restarts: int = 0
    admitted_while_down: list[str] = field(default_factory=list)
    events: list[EventBase] = field(default_factory=list)
    _one_at_a_time: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def handle(self, event: EventBase) -> None:
        self.events.append(event)
        if not isinstance(event, TurnStarted):
            return
        async with self._one_at_a_time:
            if self.restarts >= RESTARTS:
                return
            self.restarts += 1
            await asyncio.to_thread(_pg_ctl, self.server, "stop")
            admitting = None
            if not self.admitted_while_down:
                spec = chat_spec("Admitted while the server was down").model_copy(update={"requested_by": "U-down"})
                self.admitted_while_down.append(spec.id)
                admitting = asyncio.create_task(self.store.admit(spec, ROOMY))
                await asyncio.sleep(0.3)  # the admission meets the server away (and keeps trying)
                assert not admitting.done()
            await asyncio.to_thread(_pg_ctl, self.server, "start")
            if admitting is not None:
                await admitting


async def test_a_server_restarted_mid_debate_fails_no_debate_and_loses_no_start(own_server: PostgresServer) -> None:
    url = _database(own_server)
    async with FakeLLMServer() as srv, PostgresLog(url, runner="cli:test") as store:
        slow_replies(srv)
        settings = settings_for(srv)
        registry = ProviderRegistry(settings)
        try:
            jobs = DebateJobs(Engine(registry, settings), store)
            specs = [chat_spec(f"Does debate {n} outlive a restart?").model_copy(update={"requested_by": f"U{n}"})
                     for n in range(3)]
            for spec in specs:
                await jobs.admit(spec, ROOMY)
            restarter = Restarter(own_server, store)
            async with asyncio.timeout(120):
                outcomes: list[Outcome] = await asyncio.gather(*(jobs.start(spec, [restarter]) for spec in specs))
        finally:
            await registry.aclose()
        assert restarter.restarts == RESTARTS
        assert [o.status for o in outcomes] == ["completed"] * 3, [o.error for o in outcomes]
        assert not [e for e in restarter.events if isinstance(e, DebateFailed)]
        (down,) = restarter.admitted_while_down
        assert await store.get_debate(down, turns=False) is not None


async def test_slack_a_start_the_log_cannot_take_gets_one_line(
    own_server: PostgresServer, tmp_path, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setattr(pg_store, "OUTAGE_S", 1.0)
    monkeypatch.setattr(pg_store, "WAIT_S", 0.5)
    url = _database(own_server)
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        settings = slack_settings(str(tmp_path / "unused.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  DEBATE_DATABASE_URL=url, DEBATE_WORKFLOW_DB_URL=f"sqlite:///{tmp_path}/wf.sqlite")
        async with SlackBot(settings) as bot:
            await asyncio.to_thread(_pg_ctl, own_server, "stop")  # the log's server goes away for good
            status, _ = await bot.command("Should the log answer when it cannot write?", peer, channel="C9")
            assert status == 200
            await peer.wait_for(lambda p: bool(p.of("response_url")), within=30)
            await bot.settle()
            (said,) = peer.of("response_url")
            assert said.params.get("text") == LOG_UNAVAILABLE
            assert not [c for c in peer.of("chat.postMessage")]  # nothing was started
