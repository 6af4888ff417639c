"""A log that cannot be written for a while (issue 18, item 2), on a real SQLite file locked by another
connection holding `BEGIN EXCLUSIVE` (on Postgres: `LOCK TABLE turns IN ACCESS EXCLUSIVE MODE` with a short
lock_timeout), through the real engine and the loopback LLM peer. The debate stops, the platforms are told
why, and once the lock is released the debate ends up failed in the log with that reason, holding no
quota slot."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bots.slack.surface import slack_limits
from orchestrator.app import RUN_CUT_OFF, sweep_dead_runs
from orchestrator.debate.engine import Engine
from orchestrator.debate.jobs import DebateJobs
from orchestrator.events import DebateFailed, EventBase, TurnStarted
from orchestrator.log import writer_thread
from orchestrator.providers import ProviderRegistry
from orchestrator.quotas import Quota
from tests.debate_harness import settings_for
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend
from tests.log_outage_harness import ONE_AT_A_TIME, LogLock, chat_spec, names_the_lock


@dataclass
class LockingPlatform:
    """A platform sink that takes the lock when the challenger's turn starts (mid-debate, after the
    opening was logged) and releases it once it has been told the debate failed."""

    lock: LogLock
    events: list[EventBase] = field(default_factory=list)

    async def handle(self, event: EventBase) -> None:
        self.events.append(event)
        if isinstance(event, TurnStarted) and event.seat == "B":
            self.lock.take()
        if isinstance(event, DebateFailed):
            self.lock.release()


@pytest.fixture
def short_waits(monkeypatch: pytest.MonkeyPatch, log_backend: LogBackend) -> LogBackend:
    """A log that gives up on a lock quickly: SQLite's busy timeout, Postgres's lock_timeout."""
    monkeypatch.setattr(writer_thread, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setenv(writer_thread.LOCK_WAIT_VARIABLE, "0.6")  # the whole wait, over the tries
    if log_backend.name == "postgres":
        name = log_backend.target.rsplit("/", 1)[1]
        log_backend.sql(f"alter database {name} set lock_timeout = '300ms'")
    return log_backend


async def test_a_debate_the_log_stopped_ends_failed_with_its_reason_once_the_log_is_writable(
    short_waits: LogBackend,
) -> None:
    backend = short_waits
    lock = LogLock(backend)
    async with FakeLLMServer() as srv, backend.open(runner="cli:test") as store:
        script_judge(srv, "A")
        settings = settings_for(srv)
        registry = ProviderRegistry(settings)
        try:
            jobs = DebateJobs(Engine(registry, settings), store)
            first = chat_spec("Should the log ever stop a debate?")
            await jobs.admit(first, ONE_AT_A_TIME)
            platform = LockingPlatform(lock)
            outcome = await jobs.start(first, [platform])
        finally:
            lock.release()
            await registry.aclose()
        assert outcome.status == "failed" and outcome.error is not None and names_the_lock(outcome.error)
        failed = [e for e in platform.events if isinstance(e, DebateFailed)]
        assert len(failed) == 1 and failed[0].outcome.error == outcome.error
        record = await store.get_debate(first.id)
        assert record is not None and (record.status, record.error) == ("failed", outcome.error)
        assert [t.seat for t in record.turns] == ["A"]  # the opening was logged before the lock
        # the failed debate holds no slot: the same user may start another at once
        await store.admit(chat_spec("And the next one?"), ONE_AT_A_TIME)


# -- through Slack: `debate serve` in this process (front and worker), the workflows in DBOS ---------------


def _text(message: Any) -> str:
    return message.text + json.dumps(message.blocks or [])


@pytest.mark.slow
async def test_slack_a_debate_the_log_stopped_ends_failed_shows_each_message_once_and_frees_the_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(writer_thread, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setenv(writer_thread.LOCK_WAIT_VARIABLE, "0.6")
    db = tmp_path / "d.db"
    backend = LogBackend("sqlite", str(db))
    lock = LogLock(backend)
    limits = slack_limits(post_interval=0.05, updates=600, window=60.0, edit_interval=0.2)
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A")
        llm.add_rule(Reply(text="Opening: the numbers favour the cache. " * 12, tokens_per_s=40), match="gpt-5")
        llm.add_rule(Reply(text="Rebuttal: caches hide bugs. " * 12, tokens_per_s=40), match="claude")
        settings = slack_settings(str(db), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  DEBATE_MAX_RUNNING_PER_USER=1, DEBATE_WORKFLOW_DB_URL=f"sqlite:///{tmp_path}/wf.sqlite")
        async with SlackBot(settings, limits) as bot:
            status, _ = await bot.command("Should the cache sit at the edge? --rounds 1", peer, channel="C9")
            assert status == 200
            await peer.wait_for(lambda p: any("A · proposer" in m.text for m in p.messages.values()))
            lock.take()  # mid-debate: the proposer's turn is streaming into the thread
            try:
                await peer.wait_for(lambda p: any("could not be written" in _text(m) for m in p.messages.values()
                                                  if m.thread_ts is None), within=30)
            finally:
                lock.release()
            await bot.settle()
            (first,) = await bot.core.store.history(5)
            record = await bot.core.store.get_debate(first.id, turns=False)
            assert record is not None and record.status == "failed" and names_the_lock(record.error or "")

            thread = peer.thread("C9", record.thread or "")
            headers = [m.markdown.splitlines()[0] for m in thread if m.markdown.startswith("**")]  # turns
            assert headers and len(headers) == len(set(headers)), headers  # no turn shown twice
            posts = [c.params for c in peer.of("chat.postMessage") if c.params.get("thread_ts") == record.thread]
            assert len(posts) == len(thread)  # nothing posted a second time
            # no streaming cursor left
            assert not [m.ts for m in thread if (m.markdown or m.text).rstrip().endswith("▍")]

            # the failed debate holds no slot: the same user starts another at once
            status, _ = await bot.command("And the next one? --rounds 1", peer, channel="C9")
            assert status == 200
            await bot.settle()
            assert not [c for c in peer.of("response_url") if "already have" in str(c.params.get("text", ""))]
            assert len(await bot.core.store.history(5)) == 2


# -- the start-up sweep: `debate run` processes that are gone ----------------------------------------------


@pytest.mark.slow
async def test_a_start_fails_the_debates_of_debate_run_processes_that_are_gone(log_backend: LogBackend) -> None:
    gone = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    assert await gone.wait() == 0
    host = socket.gethostname()
    async with log_backend.open(runner=f"cli:{host}:{gone.pid}") as dead, \
            log_backend.open(runner=f"cli:{host}:{os.getpid()}") as alive, \
            log_backend.open(runner=f"cli:{host}:1") as other:
        orphan = chat_spec("Left running by a process that is gone")
        await dead.admit(orphan, ONE_AT_A_TIME)
        mine, init = chat_spec("Still running here"), chat_spec("Run by a process that is alive")
        await alive.create_debate(mine)
        await other.create_debate(init)
        assert await sweep_dead_runs(alive) == [orphan.id]
        record = await alive.get_debate(orphan.id, turns=False)
        assert record is not None and (record.status, record.error) == ("failed", RUN_CUT_OFF)
        for running in (mine, init):
            assert (await alive.get_debate(running.id, turns=False)).status == "running"  # type: ignore[union-attr]
        # its slot is free again: three at once, with the two still running
        await alive.admit(chat_spec("And the next one?"), Quota(max_running=10, max_running_per_user=3))
