"""A third platform, "pigeon", plugged in with only what `bots.thread` asks of a surface: it posts,
edits and deletes plain-text messages, and gives its root to the one start path. Through the real core
(the durable feed and worker on SQLite) and the loopback LLM server, it starts a debate that streams
into its thread, takes a vote, starts another that it stops, and withdraws a repeated request, with no
step copied from the Slack or Discord adapters."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bots.commands import CommandError, start_request
from bots.thread import Ended, FrontTailer, Limits, Pacer, RootState, Running
from bots.thread.start import Origin, PostedRoot, RootRefused, start_in_thread
from bots.thread.vote import NOT_A_VOTE, cast_vote, describe
from orchestrator.app import NOT_A_FRONT, Core
from orchestrator.config import Settings, load_settings
from orchestrator.events import Notice, RoundStarted, TurnStarted
from orchestrator.log import DebateRecord, Scope, Tally
from orchestrator.models import DebateSpec, Outcome, Seat, Turn, Verdict
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge

PLATFORM = "pigeon"
CHANNEL = "loft-1"
LIMITS = Limits(channel_writes=50, channel_window=0.01, edit_interval=0.01, edits_use_channel=True)


@dataclass
class Loft:
    """The platform itself: every message by id, in order, and every deletion."""

    messages: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    refuse_roots: bool = False

    def add(self, text: str) -> str:
        message_id = f"p{len(self.messages) + 1}"
        self.messages[message_id] = text
        return message_id


class PigeonThread:
    """The whole surface: one debate's root in CHANNEL and its thread, as plain text."""

    platform = PLATFORM
    root_channel = CHANNEL
    stream_limit = 500

    def __init__(self, loft: Loft, thread: str) -> None:
        self.loft = loft
        self.thread_channel = thread

    async def post(self, message: str, *, in_thread: bool = True) -> str:
        return self.loft.add(message)

    async def edit(self, message_id: str, message: str, *, in_thread: bool = True) -> None:
        self.loft.messages[message_id] = message

    def root(self, spec: DebateSpec, state: RootState) -> str:
        if isinstance(state, Ended):
            return f"{spec.topic} — {state.outcome.status}"
        return f"{spec.topic} — running"

    def round(self, event: RoundStarted) -> str | None:
        return None

    def turn_header(self, event: TurnStarted) -> str:
        return f"[{event.seat}]"

    def neutralize(self, text: str) -> str:
        return text.replace("@", "(at)")

    def turn(self, seat: Seat, chunk: str) -> str:
        return f"{seat.label}: {chunk}"

    def turn_ending(self, turn: Turn) -> str | None:
        return None

    def notice(self, event: Notice) -> list[str]:
        return [f"note: {event.text}"]

    def verdict(self, spec: DebateSpec, verdict: Verdict, tally: Tally, outcome: Outcome | None) -> str:
        return f"verdict: {verdict.winner}; votes {dict(sorted(tally.counts.items()))}"

    def ended(self, outcome: Outcome) -> str | None:
        return f"ended: {outcome.status}"


class PigeonRoot:
    """What pigeon gives the start path: post the root (its id is the thread), and delete it."""

    def __init__(self, loft: Loft, pacer: Pacer) -> None:
        self.loft = loft
        self.pacer = pacer

    async def post(self, spec: DebateSpec, notes: list[str]) -> PostedRoot:
        if self.loft.refuse_roots:
            raise RootRefused("Pigeons cannot land here; open the window first.", "the loft is closed")
        root_id = self.loft.add(PigeonThread(self.loft, "").root(spec, Running()))
        return PostedRoot(PigeonThread(self.loft, root_id), root_id, root_id)

    async def delete(self, posted: PostedRoot) -> None:
        self.loft.deleted.append(posted.root_id)
        self.loft.messages.pop(posted.root_id, None)


def _settings(tmp_path: Path, llm: FakeLLMServer) -> Settings:
    return load_settings(DEBATE_DB=str(tmp_path / "debates.db"), OPENAI_API_KEY="sk-test",
                         OPENAI_BASE_URL=llm.openai_base_url, ANTHROPIC_API_KEY="sk-ant-test",
                         ANTHROPIC_BASE_URL=llm.anthropic_base_url, DEBATE_MAX_RETRIES=0)


@dataclass
class Pigeon:
    core: Core
    tailer: FrontTailer
    loft: Loft
    pacer: Pacer

    def origin(self, request: str, user: str = "u1") -> Origin:
        return Origin(platform=PLATFORM, channel=CHANNEL, user=user, workspace="w1", channel_private=False,
                      request_key=request)

    async def start(self, request: str, proposer: str = "openai:gpt-5") -> str | None:
        command = start_request("Should pigeons carry the mail? @everyone", rounds=1, proposer=proposer,
                                challenger="anthropic:claude-sonnet-4-6", judge="openai:judge-1")
        started = await start_in_thread(self.core, self.tailer, command, self.origin(request),
                                        PigeonRoot(self.loft, self.pacer))
        return None if started is None else started.spec.id

    async def record(self, debate_id: str) -> DebateRecord:
        record = await self.core.debate(debate_id, turns=True)
        assert record is not None
        return record


@pytest.fixture
async def pigeon(tmp_path: Path, llm_server: FakeLLMServer) -> AsyncIterator[Pigeon]:
    script_judge(llm_server, "A")
    llm_server.add_rule(Reply(text="Proposer: pigeons are cheap @here."), match="gpt-5")
    llm_server.add_rule(Reply(text="Challenger: pigeons get lost."), match="claude-sonnet-4-6")
    loft, pacer = Loft(), Pacer(LIMITS)
    core = await Core.open(_settings(tmp_path, llm_server))
    assert core.feed is not None

    async def reach(record: DebateRecord) -> tuple[PigeonThread, Pacer] | None:
        return None if record.thread is None else (PigeonThread(loft, record.thread), pacer)

    tailer = FrontTailer(core.feed, core.store, PLATFORM, reach, renderer=core.renderer)
    try:
        yield Pigeon(core, tailer, loft, pacer)
    finally:
        await tailer.aclose()
        await core.close()


@pytest.mark.slow
async def test_a_third_surface_starts_streams_and_takes_votes(pigeon: Pigeon) -> None:
    debate_id = await pigeon.start("pigeon:1")
    assert debate_id is not None
    await pigeon.tailer.idle()
    record = await pigeon.record(debate_id)
    assert record.status == "completed" and record.platform == PLATFORM and record.workspace == "w1"
    root_id = record.thread
    assert root_id is not None and pigeon.loft.messages[root_id].endswith("completed")
    texts = list(pigeon.loft.messages.values())
    assert any(t.startswith("A: [A]") and "pigeons are cheap (at)here" in t for t in texts)  # streamed, inert
    assert any(t.startswith("B: [B]") for t in texts)
    verdict_id = (await pigeon.core.messages(debate_id))["verdict"].message_id
    assert pigeon.loft.messages[verdict_id] == "verdict: A; votes {}"

    scope = Scope(platform=PLATFORM, workspace="w1", channel=CHANNEL)
    surface = PigeonThread(pigeon.loft, root_id)
    for user, choice in (("u1", "side:B"), ("u2", "agree"), ("u1", "side:A")):  # u1 changes their mind
        shown = await cast_vote(pigeon.core, debate_id=debate_id, choice=choice, user=user, platform=PLATFORM,
                                scope=scope, where=CHANNEL, message_id=verdict_id)
        await surface.edit(verdict_id, surface.verdict(shown.spec, shown.verdict, shown.tally, shown.outcome))
    assert pigeon.loft.messages[verdict_id] == "verdict: A; votes {'agree': 1, 'side:A': 1}"
    assert shown.outcome is not None and shown.outcome.status == "completed"
    assert describe("side:A") == "convinced by A"

    # a forged choice, another place, or a debate this scope cannot see: one refusal that names nothing
    for choice, where, seen_from in (("side:Z", CHANNEL, scope), ("agree", "loft-2", scope),
                                     ("agree", CHANNEL, Scope(platform=PLATFORM, workspace="w2", channel="x"))):
        with pytest.raises(CommandError, match=NOT_A_VOTE):
            await cast_vote(pigeon.core, debate_id=debate_id, choice=choice, user="u3", platform=PLATFORM,
                            scope=seen_from, where=where, message_id=verdict_id)
    assert (await pigeon.core.tally(debate_id)).total == 2


@pytest.mark.slow
async def test_a_third_surface_stops_a_running_debate(pigeon: Pigeon, llm_server: FakeLLMServer) -> None:
    gate = asyncio.Event()
    llm_server.add_rule(Reply(text="Held.", gate=gate), match="gpt-5-held")
    debate_id = await pigeon.start("pigeon:2", proposer="openai:gpt-5-held")
    assert debate_id is not None
    await llm_server.wait_for_requests(1)  # the proposer's call is open
    outcome = await pigeon.tailer.stop(debate_id)
    gate.set()
    assert outcome is not None and outcome.status == "cancelled"
    await pigeon.tailer.idle()
    record = await pigeon.record(debate_id)
    assert record.status == "cancelled"
    assert record.thread is not None and pigeon.loft.messages[record.thread].endswith("cancelled")


@pytest.mark.slow
async def test_a_repeated_request_is_withdrawn_and_a_refused_root_gives_its_slot_back(pigeon: Pigeon) -> None:
    first = await pigeon.start("pigeon:same")
    assert first is not None
    assert await pigeon.start("pigeon:same") is None  # a retry that got past the claim: nothing new runs
    await pigeon.tailer.idle()
    (withdrawn,) = pigeon.loft.deleted
    repeat = await pigeon.core.debate_of_message(PLATFORM, CHANNEL, withdrawn)
    assert repeat is not None and repeat != first
    record = await pigeon.record(repeat)
    assert record.status == "failed" and record.error is not None and first in record.error
    assert (await pigeon.core.messages(repeat))["root"].final  # nothing of it to resume
    assert (await pigeon.record(first)).status == "completed"

    pigeon.loft.refuse_roots = True
    with pytest.raises(CommandError, match="open the window first"):
        await pigeon.start("pigeon:refused")
    running = [s for s in await pigeon.core.history(10) if s.status == "running"]
    assert not running  # the refused debate holds no slot


async def test_a_process_that_is_not_a_front_says_so_once(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    core = await Core.open(_settings(tmp_path, llm_server), role="run")  # debates in-process: no feed
    loft = Loft()
    try:
        command = start_request("Should pigeons carry the mail?", rounds=1)
        origin = Origin(platform=PLATFORM, channel=CHANNEL, user="u1", workspace="w1", channel_private=False,
                        request_key="r")
        with pytest.raises(CommandError) as refused:
            await start_in_thread(core, None, command, origin, PigeonRoot(loft, Pacer(LIMITS)))
        assert str(refused.value) == NOT_A_FRONT and not loft.messages
    finally:
        await core.close()


def test_the_core_settings_know_no_platform() -> None:
    from bots.settings import BotSettings

    core_names = {f.alias or name for name, f in Settings.model_fields.items()}
    assert not {n for n in core_names if n.startswith(("SLACK_", "DISCORD_"))}
    platform_names = {f.alias for f in BotSettings.model_fields.values()} - core_names
    assert {"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET",
            "SLACK_API_BASE_URL", "DISCORD_BOT_TOKEN", "DISCORD_GUILD_IDS", "DISCORD_API_BASE_URL",
            "DISCORD_GATEWAY_URL", "DISCORD_SHARD_COUNT", "DISCORD_SHARD_IDS"} <= platform_names


def test_adapters_call_the_core_not_the_log() -> None:
    """Slack, Discord, the CLI and the shared command code ask the core (orchestrator/operations.py), never
    its log (`core.store.…`); the log is only handed on whole, to the thread renderer and the audience."""
    root = Path(__file__).parent.parent / "bots"
    reaching = [f"{path.relative_to(root)}:{n}" for path in sorted(root.rglob("*.py"))
                for n, line in enumerate(path.read_text().splitlines(), 1)
                if re.search(r"core\.store\.\w|=\s*[\w.]*core\.store\s*$", line)]
    assert not reaching, reaching
