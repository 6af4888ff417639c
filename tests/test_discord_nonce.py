"""A Discord post whose answer never reached the front (issue 57, item 16): the front was killed, or the
connection dropped, after Discord took the message and before the log recorded its id. Each keyed post
is announced in the log first (its key PENDING) and sent with a nonce made from its key, `enforce_nonce`
set; whoever posts the key again gets the message Discord took the first time, not a second one. Real
discord.py against the loopback Discord peer (which honours enforced nonces as Discord does), a real
SQLite log."""

from __future__ import annotations

import asyncio
from pathlib import Path

import discord
import pytest

from bots.discord.surface import DiscordThread, discord_limits, message_nonce
from bots.settings import load_settings
from bots.thread import Pacer, ThreadSink, turn_key
from bots.thread.coalesce import POST_ATTEMPTS
from bots.thread.keys import PENDING
from orchestrator.app import Core
from orchestrator.events import TurnStarted
from tests.discord_harness import connected
from tests.fakes.discord_api import CHANNEL_ID, TOKEN, DiscordPeer
from tests.thread_resume_harness import _feed, at_least_once, debate_events, spec_for

FAST = discord_limits(writes=50, window=1.0, edit_interval=0.05)


def _posts(peer: DiscordPeer, channel_id: str) -> list[dict]:
    return [c.body for c in peer.calls if c.method == "POST" and c.path == f"/channels/{channel_id}/messages"]


@pytest.mark.slow
async def test_discord_a_post_lost_to_a_crash_is_the_same_message_when_the_resumed_front_posts_it(
    tmp_path: Path,
) -> None:
    spec = spec_for("discord")
    events = debate_events(spec)
    b_starts = next(i for i, e in enumerate(events) if isinstance(e, TurnStarted) and e.seat == "B")
    b_key = turn_key(1, "B", "opening", 0)
    async with DiscordPeer() as peer:
        settings = load_settings(DEBATE_DB=str(tmp_path / "log.db"), DISCORD_BOT_TOKEN=TOKEN,
                                 DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url)
        async with await Core.open(settings) as core, connected(core) as bot:
            store = core.store
            await store.create_debate(spec)
            channel = bot.get_channel(int(CHANNEL_ID))
            assert isinstance(channel, discord.TextChannel)
            root = await channel.send(content=f"Debate: {spec.topic}", allowed_mentions=discord.AllowedMentions.none())
            thread = await bot.output.open_thread(root, spec.topic)
            in_thread = str(thread.id)
            first = await ThreadSink.open(DiscordThread(thread, channel), Pacer(FAST), store, spec, str(root.id))
            await _feed(first, events[:b_starts])  # the round marker, the notice, A's turn
            await peer.wait_for(lambda: len(peer.channel_messages(in_thread)) == 3)
            # B's first message reaches Discord, and every answer to it is lost: the front never learns its id
            peer.lose_answers("POST", f"^/channels/{in_thread}/messages$", count=POST_ATTEMPTS)
            await _feed(first, events[b_starts:b_starts + 3])
            await peer.wait_for(lambda: len(_posts(peer, in_thread)) >= 4)
            await first.aclose()  # the front is gone (a kill -9 leaves the log as it is now)
            peer.answer_all()
            assert (await store.messages(spec.id))[b_key].message_id == PENDING  # announced before it was sent
            assert len(peer.channel_messages(in_thread)) == 4  # Discord has B's message

            second = await ThreadSink.resume(DiscordThread(thread, channel), Pacer(FAST), store, spec)
            await _feed(second, at_least_once(events))
            await asyncio.wait_for(second.wait_closed(), 20)

            recorded = await store.messages(spec.id)
            assert all(m.final for m in recorded.values())
            messages = peer.channel_messages(in_thread)
            assert len(messages) == 5, [m["embeds"] or m["content"] for m in messages]  # round, notice, A, B, verdict
            assert sorted(m["id"] for m in messages) == sorted(m.message_id for k, m in recorded.items() if k != "root")
            b_posts = [body for body in _posts(peer, in_thread) if body.get("nonce") == message_nonce(in_thread, b_key)]
            assert len(b_posts) >= 2 and all(body["enforce_nonce"] is True for body in b_posts)  # sent again …
            (b_message,) = [m for m in messages if m.get("nonce") == message_nonce(in_thread, b_key)]  # … one message
            assert recorded[b_key].message_id == b_message["id"]
            assert "Rebuttal" in str(b_message["embeds"])  # edited to B's final text


def test_a_message_nonce_fits_discord_and_differs_by_channel_and_key() -> None:
    nonces = {message_nonce(channel, key) for channel in ("1", "2") for key in ("turn:1:A:opening:0", "verdict")}
    assert len(nonces) == 4 and all(len(n) == 25 for n in nonces)
    assert message_nonce("1", "verdict") == message_nonce("1", "verdict")
