"""A turn's first text, as a durable stream delivers it: its first batch is a word or two, the next comes
half a second later. What readers first see of the turn is a phrase, as soon as there is one: on Slack the
turn's first post carries it (chat.update is scarce), on Discord the edit that replaces the placeholder
carries it without keeping the edit interval from the placeholder's post, and where edits share a budget a
placeholder's first text goes before the edits of turns already showing text. Through the real Slack Web
API peer (slack_sdk's client) and the real Discord peer (discord.py's client)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import discord
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bots.discord import point_discord_at
from bots.discord.surface import DiscordThread, discord_limits
from bots.settings import load_settings
from bots.slack.surface import SlackThread, slack_limits
from bots.thread import LiveTurns, Paced, Pacer
from orchestrator.events import TextDelta, TurnStarted
from orchestrator.models import DebateSpec, Seat, Turn
from tests.fakes.discord_api import CHANNEL_ID, TOKEN, DiscordPeer
from tests.fakes.slack_api import SlackAPIPeer

SPEC = DebateSpec(topic="Kafka or RabbitMQ?", rounds=1, judge="openai:judge",
                  seats=(Seat(label="A", role="proposer", model="openai:a"),
                         Seat(label="B", role="challenger", model="openai:b")))
FIRST, REST = "Kafka ", "keeps an ordered, replayable log of every event."
PHRASE = "Kafka keeps an ordered, replayable log"
BATCH_GAP_S = 0.3  # the stream's next batch after its first (DBOS streams: every 0.5 s)


def _started(seat: str) -> TurnStarted:
    return TurnStarted(debate_id=SPEC.id, round=1, seat=seat, role="proposer", kind="opening", model="openai:a")


def _delta(text: str, seat: str, offset: int = 0) -> TextDelta:
    return TextDelta(debate_id=SPEC.id, round=1, seat=seat, kind="opening", delta=text, offset=offset)


def _turn(text: str, seat: str) -> Turn:
    return Turn(debate_id=SPEC.id, round=1, seat=seat, role="proposer", kind="opening", model="openai:a", text=text)


def _recording(into: dict[str, str]) -> Callable[[str, str], Awaitable[None]]:
    async def record(key: str, message_id: str) -> None:
        into[key] = message_id

    return record


async def _as_a_stream_batches(live: LiveTurns, seat: str) -> None:
    live.feed(_delta(FIRST, seat))
    await asyncio.sleep(BATCH_GAP_S)  # the stream's batching, not a wait for an event
    live.feed(_delta(REST, seat, offset=len(FIRST)))


async def test_a_slack_turn_is_first_posted_with_a_phrase_not_its_first_batchs_word() -> None:
    # a grace far shorter than the stream's batch gap: the post used to go with the first word alone,
    # and the phrase then waited for the workspace's scarce chat.update budget
    limits = slack_limits(post_interval=0.02, updates=1000, window=1.0, edit_interval=2.0, first_post_grace=0.02)
    async with SlackAPIPeer() as peer:
        surface = SlackThread(AsyncWebClient(token="xoxb-test", base_url=peer.base_url), "C1", "1.000")
        live = LiveTurns(Paced(surface, Pacer(limits)), SPEC, _recording({}), first_post_grace=limits.first_post_grace,
                         placeholder_after=limits.placeholder_after)
        await live.begin(_started("A"))
        await _as_a_stream_batches(live, "A")
        await peer.wait_for(lambda p: any(c.method == "chat.postMessage" for c in p.calls), within=10)
        first = next(c for c in peer.calls if c.method == "chat.postMessage")
        assert PHRASE in first.markdown, first.markdown
        await live.finish(_turn(FIRST + REST, "A"))
        await live.aclose()


@pytest.fixture
async def discord_channel() -> AsyncIterator[tuple[DiscordPeer, discord.PartialMessageable]]:
    async with DiscordPeer() as peer:
        point_discord_at(load_settings(DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url,
                                       DISCORD_GATEWAY_URL=peer.gateway_url))
        client = discord.Client(intents=discord.Intents.default())
        await client.login(TOKEN)
        try:
            yield peer, client.get_partial_messageable(int(CHANNEL_ID))
        finally:
            await client.close()


def _edits(peer: DiscordPeer, message_id: str) -> list[str]:
    return [" ".join(e.get("description", "") for e in c.body.get("embeds") or []) for c in peer.calls
            if c.method == "PATCH" and c.path.endswith(f"/messages/{message_id}") and isinstance(c.body, dict)]


async def test_a_discord_placeholder_is_replaced_by_a_phrase_without_waiting_out_the_edit_interval(
    discord_channel: tuple[DiscordPeer, discord.PartialMessageable],
) -> None:
    # an edit interval longer than the test may wait: the placeholder's first edit used to keep it
    peer, channel = discord_channel
    limits = discord_limits(writes=5, window=0.5, edit_interval=30.0)
    posted: dict[str, str] = {}
    live = LiveTurns(Paced(DiscordThread(channel, channel), Pacer(limits)), SPEC, _recording(posted))
    await live.begin(_started("A"))  # posts the placeholder
    (message_id,) = posted.values()
    await _as_a_stream_batches(live, "A")
    await peer.wait_for(lambda: _edits(peer, message_id), within=10)
    assert PHRASE in _edits(peer, message_id)[0]
    await live.aclose()
