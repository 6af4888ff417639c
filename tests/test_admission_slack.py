"""Issue 18 in Slack, through bolt's real dispatch against the Slack API peer: `/debate continue` and
`/debate rematch` pass the same admission as a new debate, for the person who asks (item 1), and a
rematch asked from a private channel leaves no trace in the public original's thread (item 13)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.admission_slack_harness import LIMITS
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import FIRST_RECOMMENDATION, is_judge, script_judge
from tests.slack_team_harness import answer, ask, debated, root_of

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

HELD_TOPIC = "Should the held debate wait?"


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        p.declare_channel("G1", "private")
        yield p


def hold(llm: FakeLLMServer, gate: asyncio.Event) -> None:
    """Every continuation's debaters, and every debate on HELD_TOPIC, wait for `gate`; the judge picks A."""
    def held(record: RequestRecord) -> bool:
        return not is_judge(record) and (FIRST_RECOMMENDATION in record.prompt_text or HELD_TOPIC in record.prompt_text)

    llm.add_rule(Reply(text="I hold my position.", gate=gate), match=held)
    script_judge(llm, "A", recommendation=FIRST_RECOMMENDATION)


async def test_continue_and_rematch_are_admitted_like_a_start_for_whoever_asks(
    tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    gate = asyncio.Event()
    hold(llm_server, gate)
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url,
                              DEBATE_MAX_CONCURRENT=3, DEBATE_MAX_RUNNING_PER_USER=2,
                              DEBATE_MAX_RUNNING_PER_CHANNEL=5)
    async with SlackBot(settings, LIMITS) as bot:
        done = [await debated(bot, peer, f"Tabs or spaces, take {n}? --rounds 1", user="U1") for n in range(3)]

        for debate_id in done[:2]:
            assert "one more round" in await answer(peer, await ask(bot, peer, f"continue {debate_id}", user="U5"))
        third = await answer(peer, await ask(bot, peer, f"continue {done[2]}", user="U5"))
        assert third.startswith(f"You already have 2 debates running (`{done[0]}`, `{done[1]}`)"), third
        assert "DEBATE_MAX_RUNNING_PER_USER" in third

        # the slots are U5's: U1, whose debates they were, starts one of their own (the third running)
        await ask(bot, peer, HELD_TOPIC, user="U1")
        await peer.wait_for(lambda p: len([s for s in p.of("chat.postMessage") if "thread_ts" not in s.params]) == 4)
        running = [d for d in await bot.core.store.history(10) if d.status == "running"]
        assert sorted(d.requested_by or "" for d in running) == ["U1", "U1", "U1"] and len(running) == 3

        full = await answer(peer, await ask(bot, peer, f"continue {done[2]}", user="U6"))
        assert full.startswith("3 debates are already running") and "DEBATE_MAX_CONCURRENT" in full
        again = await answer(peer, await ask(bot, peer, f"rematch {done[2]}", user="U5", channel="C2"))
        assert again.startswith("You already have 2 debates running") and "DEBATE_MAX_RUNNING_PER_USER" in again
        record = await bot.core.store.get_debate(done[2], turns=False)
        assert record is not None and (record.status, record.segment, record.rematches) == ("completed", 1, ())

        gate.set()
        await bot.settle()
        history = await bot.core.store.history(10)
        assert len(history) == 4 and all(d.status == "completed" for d in history)
        assert sorted(d.segment for d in history if d.id in done) == [1, 2, 2]


async def test_a_rematch_from_a_private_channel_leaves_the_public_originals_thread_alone(
    tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    script_judge(llm_server, "A")
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url)
    async with SlackBot(settings, LIMITS) as bot:
        original = await debated(bot, peer, "Postgres or DynamoDB? --rounds 1", channel="C1")
        hidden = await debated(bot, peer, f"rematch {original}", channel="G1", user="U5")
        record = await bot.core.store.get_debate(hidden, turns=False)
        assert record is not None and record.rematch_of == original and record.channel_private is True

        first_root = await root_of(bot, peer, original)
        thread = json.dumps([m.text for m in peer.thread("C1", first_root.ts)])
        assert hidden not in thread and "Rematch" not in thread and "G1" not in thread
        assert not [c for c in peer.calls if c.method == "chat.postMessage" and c.params.get("channel") == "C1"
                    and hidden in json.dumps(c.params)]

        # the same request from a public channel is announced there, as before
        shown = await debated(bot, peer, f"rematch {original}", channel="C4", user="U5")
        (link,) = [m for m in peer.thread("C1", first_root.ts) if shown in m.text]
        assert "Rematch" in link.text
