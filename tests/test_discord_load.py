"""Many debates in one Discord channel: one write budget per channel, shared by everything that writes there.

Discord allows about 5 writes per 5 s per channel. Every debate started in a channel opens its thread
and edits its root message there, so those writes must share one pacer (the bot's, per channel id);
a thread is a channel of its own. The peer here enforces 5 writes per 1 s and the bot paces to the same
scaled limit, so the whole run takes seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import discord.http
import pytest

from bots.discord import DebateBot, point_discord_at
from bots.discord.surface import DiscordThread, discord_limits
from bots.settings import load_settings
from bots.thread import Paced, Pacer, Urgency, run_to_completion, turn_key
from bots.thread.pacing import PRUNE_CHANNELS_AT
from bots.thread.text import neutralize_discord
from orchestrator.app import Core
from orchestrator.config import Settings
from tests.discord_harness import connected
from tests.fakes.discord_api import CHANNEL_ID, TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import steady_judge_json

DEBATES = 8
WINDOW = 1.0  # Discord's 5 writes per 5 s, five times faster
PACING = discord_limits(writes=5, window=WINDOW, edit_interval=0.25)
VERDICT = {
    "winner": "A", "reasoning": "A gave numbers.", "ratings": {}, "agreements": [], "disagreements": [],
    "unresolved": [], "recommendation": "Use Kafka for the audit log.",
}


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(rate_limit=(5, WINDOW)) as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, llm_server: FakeLLMServer, peer: DiscordPeer) -> Settings:
    steady_judge_json(llm_server, VERDICT, "judge-1")
    llm_server.add_rule(Reply(text="Kafka keeps an ordered, replayable log. " * 6, tokens_per_s=200), match="gpt-5")
    llm_server.add_rule(Reply(text="RabbitMQ is simpler to run and enough here. " * 6, tokens_per_s=200),
                        match="claude-sonnet-4-6")
    return load_settings(
        DEBATE_DB=str(tmp_path / "debates.db"),
        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
        DEBATE_MAX_RETRIES=0,
        # many debates from one user in one channel: the chat quotas (tests/test_quotas.py) out of the way
        DEBATE_MAX_RUNNING_PER_USER=50, DEBATE_MAX_RUNNING_PER_CHANNEL=50, DEBATE_MAX_STARTS_PER_USER_HOUR=100,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
    )


OPTIONS = {"rounds": 1, "proposer": "openai:gpt-5", "challenger": "anthropic:claude-sonnet-4-6",
           "judge": "openai:judge-1"}


def _root_status(peer: DiscordPeer, message_id: str | None) -> str:
    message = peer.messages.get(message_id or "", {})
    fields = message.get("embeds", [{}])[0].get("fields", []) if message.get("embeds") else []
    return next((f["value"] for f in fields if f["name"] == "Status"), "")


def _finished(peer: DiscordPeer, message_ids: list[str | None]) -> bool:
    return all("Finished" in _root_status(peer, m) for m in message_ids)


async def _lost_turns(core: Core, peer: DiscordPeer) -> tuple[int, int]:
    """(turns whose stored text is not all in their message, turns) over every debate in the store."""
    lost = turns = 0
    for summary in await core.store.history(100):
        record = await core.store.get_debate(summary.id)
        assert record is not None
        for turn in record.turns:
            turns += 1
            shown, part = "", 0
            while message_id := await core.store.get_message(record.id, turn_key(turn.round, turn.seat, turn.kind,
                                                                                  part)):
                message = peer.messages.get(message_id, {})  # every message of the turn, each under its key
                shown += " ".join(" ".join(e.get("description", "").split()) for e in message.get("embeds", []))
                part += 1
            lost += not turn.text or " ".join(neutralize_discord(turn.text).split()) not in shown
    return lost, turns


@pytest.mark.slow
async def test_debates_started_at_once_in_one_channel_share_its_budget(settings: Settings, peer: DiscordPeer) -> None:
    async with await Core.open(settings) as core, connected(core, pacing=PACING) as bot:
        records = [
            await peer.dispatch_interaction(peer.slash_command(
                "debate", {"topic": f"Kafka or RabbitMQ for audit log #{i}?", **OPTIONS},
                user_id=f"74000000000000{i:04d}"))
            for i in range(DEBATES)
        ]
        await peer.wait_for(lambda: all(r.original for r in records), within=10)
        roots = [r.original for r in records]
        await peer.wait_for(lambda: _finished(peer, roots), within=40)
        await asyncio.wait_for(_sinks_closed(bot), 10)

        # every debate got its thread and its verdict; nobody was told something went wrong
        threads = peer.threads()
        assert sorted(t["id"] for t in threads) == sorted(r for r in roots if r)
        assert all(any(m["components"] for m in peer.channel_messages(t["id"])) for t in threads)
        assert not [c for c in peer.calls if c.path.startswith("/webhooks/")]
        history = await core.store.history(100)
        assert len(history) == DEBATES and all(h.status == "completed" for h in history)
        # no 429 anywhere: the parent channel's writes (thread creation, root edits) shared one pacer
        assert [c.path for c in peer.calls if c.status == 429] == []
        parent = [c for c in peer.calls if c.is_write and c.path.startswith(f"/channels/{CHANNEL_ID}/")]
        assert sum(c.path.endswith("/threads") for c in parent) == DEBATES
        # root progress edits coalesce: at most one progress edit and the final one per debate
        edits = [c for c in parent if c.method == "PATCH"]
        assert DEBATES <= len(edits) <= 2 * DEBATES
        assert {c.path.rsplit("/", 1)[1] for c in edits} == set(roots)
        # no turn text lost
        lost, turns = await _lost_turns(core, peer)
        assert turns == 2 * DEBATES and lost == 0


async def _sinks_closed(bot: DebateBot) -> None:
    """Every debate's sink has rendered its final event (and landed its final root edit)."""
    await bot.output.rendered()


@pytest.mark.slow
async def test_a_thread_is_opened_even_through_429s_discord_py_gives_up_on(
    settings: Settings, peer: DiscordPeer
) -> None:
    threads = r"^/channels/\d+/messages/\d+/threads$"
    peer.fail_next("POST", threads, count=1, retry_after=0.05, via=False)  # discord.py raises at once
    peer.fail_next("POST", threads, count=5, retry_after=0.05)  # with Via: discord.py's 5 tries, then it raises
    async with await Core.open(settings) as core, connected(core, pacing=PACING) as bot:
        record = await peer.dispatch_interaction(peer.slash_command("debate", {"topic": "Tabs?", **OPTIONS}))
        await peer.wait_for(lambda: _finished(peer, [record.original]), within=20)
        await asyncio.wait_for(_sinks_closed(bot), 10)
    statuses = [c.status for c in peer.calls if c.path.endswith("/threads")]
    assert statuses == [429] * 6 + [201]
    assert [t["id"] for t in peer.threads()] == [record.original]
    assert not [c for c in peer.calls if c.path.startswith("/webhooks/")]  # no "Something went wrong"


# ---------------------------------------------------------------- the pacer and the registry


async def test_one_pacer_per_channel_id() -> None:
    pacer = Pacer(discord_limits(5, WINDOW))
    parent = pacer.channel("1")
    async with pacer.posting("1"):
        assert pacer.channel("1") is parent  # one budget per channel id, shared by everything written there
    assert pacer.channel("2") is not parent
    # once there are PRUNE_CHANNELS_AT budgets, a lookup forgets those at rest, not one with a write in its window
    for other in range(3, PRUNE_CHANNELS_AT + 1):
        pacer.channel(str(other))
    assert pacer.channel_count == PRUNE_CHANNELS_AT
    assert pacer.channel("1") is parent  # its window still has a write in it
    assert pacer.channel_count == 1  # the others never wrote: gone
    assert not parent.idle(asyncio.get_running_loop().time())
    for other in range(2, PRUNE_CHANNELS_AT + 1):  # and the next look comes once there are PRUNE_CHANNELS_AT again
        pacer.channel(str(other))
    assert pacer.channel_count == PRUNE_CHANNELS_AT


async def test_urgent_writes_go_first_and_the_limit_holds() -> None:
    loop = asyncio.get_running_loop()
    pacer = Pacer(discord_limits(2, 0.2))
    order: list[str] = []
    times: list[float] = []

    async def write(name: str, urgency: Urgency) -> None:
        async with pacer.posting("C", urgency):
            order.append(name)
            times.append(loop.time())

    async def edit(name: str, urgency: Urgency) -> None:  # edits take the channel's writes too
        async with pacer.editing("C", name, urgency):
            order.append(name)
            times.append(loop.time())

    await asyncio.gather(write("a", Urgency.REPLY), edit("b", Urgency.TEXT))  # the window is now full
    waiting = [asyncio.create_task(write(f"p{i}", Urgency.STATUS)) for i in range(2)]
    waiting += [asyncio.create_task(edit("n", Urgency.REPLY)), asyncio.create_task(write("u", Urgency.OPEN))]
    cancelled = asyncio.create_task(write("x", Urgency.OPEN))
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.gather(*waiting)
    assert order == ["a", "b", "u", "n", "p0", "p1"]
    assert all(later - earlier >= 0.2 - 0.01 for earlier, later in zip(times, times[2:], strict=False))


@pytest.mark.slow
async def test_a_write_cancelled_in_flight_does_not_stall_the_next_one_on_its_route(
    settings: Settings, peer: DiscordPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`LiveTurns.finish` cancels a turn's flusher, maybe mid-edit, then edits the same message.

    A cancel landing in discord.py's `Ratelimit._refresh` (after the response, between its sleep and its
    wake-up) used to leave the route's bucket at 0 with nothing to wake it, so the final edit of the turn
    waited 30 s in `Ratelimit.acquire`. The hook below only marks that moment, to cancel exactly there.
    """
    refreshing = asyncio.Event()
    refresh = discord.http.Ratelimit._refresh

    async def marked_refresh(self: discord.http.Ratelimit) -> None:
        refreshing.set()
        await refresh(self)

    async with await Core.open(settings) as core, DebateBot(core) as bot:
        point_discord_at(settings)
        await bot.login(TOKEN)
        channel = bot.get_partial_messageable(int(CHANNEL_ID))
        out = Paced(DiscordThread(channel, channel), Pacer(discord_limits(5, WINDOW, edit_interval=0.0)))
        message_id = await out.post(lambda: {"content": "streaming"}, Urgency.TEXT)
        monkeypatch.setattr(discord.http.Ratelimit, "_refresh", marked_refresh)
        flusher = asyncio.create_task(out.edit(message_id, lambda: {"content": "streaming more"}, Urgency.TEXT))
        await refreshing.wait()
        flusher.cancel()
        with pytest.raises(asyncio.CancelledError):
            await flusher
        final = out.edit(message_id, lambda: {"content": "final"}, Urgency.TEXT)
        await asyncio.wait_for(final, 5)  # was: 30 s in Ratelimit.acquire
    assert peer.messages[message_id]["content"] == "final"


async def test_a_started_write_is_finished_before_its_cancelled_caller_returns() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    async def write() -> str:
        started.set()
        await release.wait()
        finished.append("written")
        return "written"

    caller = asyncio.create_task(run_to_completion(write()))
    await started.wait()
    caller.cancel()
    await asyncio.sleep(0)
    caller.cancel()  # a second cancel changes nothing either
    await asyncio.sleep(0)
    assert not caller.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert finished == ["written"]
