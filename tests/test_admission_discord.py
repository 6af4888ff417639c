"""Issue 18 in Discord, through the real discord.py client against the Discord peer: `/debate-continue`,
the Continue form and `/debate-rematch` pass the same admission as `/debate`, for the member who asks
(item 1), and a rematch asked from a private channel leaves no trace in the public original's thread
(item 13)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from orchestrator.app import Core
from tests import admission_discord_harness
from tests.admission_discord_harness import DANA, LEE, NEWCOMER, PRIVATE_CHANNEL, debated, settings_for
from tests.discord_harness import connected
from tests.discord_team_harness import FAST, SIDE_CHANNEL, ask, finished, options, start, verdict_messages
from tests.fakes.discord_api import DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply, RequestRecord
from tests.llm_scripts import FIRST_RECOMMENDATION, is_judge, script_judge

# the fixtures this module's tests take, defined with what other test modules share
peer = admission_discord_harness.peer

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

HELD_TOPIC = "Should the held debate wait?"


def hold(llm: FakeLLMServer, gate: asyncio.Event) -> None:
    """Every continuation's debaters, and every debate on HELD_TOPIC, wait for `gate`; the judge picks A."""
    def held(record: RequestRecord) -> bool:
        return not is_judge(record) and (FIRST_RECOMMENDATION in record.prompt_text or HELD_TOPIC in record.prompt_text)

    llm.add_rule(Reply(text="I hold my position.", gate=gate), match=held)
    script_judge(llm, "A", recommendation=FIRST_RECOMMENDATION)


async def test_continue_by_command_and_form_and_rematch_are_admitted_like_a_start_for_whoever_asks(
    tmp_path: Path, peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    gate = asyncio.Event()
    hold(llm_server, gate)
    settings = settings_for(tmp_path, llm_server, peer, DEBATE_MAX_CONCURRENT=2, DEBATE_MAX_RUNNING_PER_USER=1,
                            DEBATE_MAX_RUNNING_PER_CHANNEL=2)
    async with await Core.open(settings) as core, connected(core, pacing=FAST) as bot:
        done = [await debated(bot, peer, f"Tabs or spaces, take {n}?", DANA) for n in range(3)]
        (first, _), (second, second_root), (third, _) = done

        assert "one more round" in await ask(peer, peer.slash_command("debate-continue", {"debate_id": first},
                                                                      user_id=LEE))
        (verdict,) = verdict_messages(peer, second_root)
        click = await peer.dispatch_interaction(peer.button_click(verdict["id"], f"debate:continue:{second}",
                                                                  user_id=LEE))
        await peer.wait_for(lambda: click.modal is not None)
        assert click.modal is not None
        (field,) = [c["component"] for c in click.modal["components"]]
        by_form = await ask(peer, peer.modal_submit(click, {field["custom_id"]: ""}, user_id=LEE))
        assert f"You already have 1 debate running (`{first}`)" in by_form, by_form
        assert "DEBATE_MAX_RUNNING_PER_USER" in by_form

        # the slot is Lee's: Dana, whose debate it was, starts one of her own (2 running, 2 in this channel)
        mine, mine_root = await start(peer, peer.slash_command("debate", options(HELD_TOPIC), user_id=DANA))
        crowded = await ask(peer, peer.slash_command("debate-continue", {"debate_id": third}, user_id=NEWCOMER))
        assert "This channel already has 2 debates running" in crowded and "DEBATE_MAX_RUNNING_PER_CHANNEL" in crowded
        full = await ask(peer, peer.slash_command("debate-rematch", {"debate_id": third}, user_id=NEWCOMER,
                                                  channel_id=SIDE_CHANNEL))
        assert "2 debates are already running" in full and "DEBATE_MAX_CONCURRENT" in full
        yours = await ask(peer, peer.slash_command("debate-rematch", {"debate_id": third}, user_id=LEE,
                                                   channel_id=SIDE_CHANNEL))
        assert "You already have 1 debate running" in yours and "DEBATE_MAX_RUNNING_PER_USER" in yours
        assert [t["id"] for t in peer.threads()] == [root for _, root in done] + [mine_root]

        gate.set()
        await finished(bot, peer, mine_root)
        await peer.wait_for(lambda: len(verdict_messages(peer, done[0][1])) == 2, within=30)
        await bot.output.rendered()
        records = {d: await core.store.get_debate(d, turns=False) for d in (first, second, third, mine)}
        assert {d: (r.status, r.segment) for d, r in records.items() if r is not None} == {
            first: ("completed", 2), second: ("completed", 1), third: ("completed", 1), mine: ("completed", 1)}


async def test_a_rematch_from_a_private_channel_leaves_the_public_originals_thread_alone(
    tmp_path: Path, peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    script_judge(llm_server, "A")
    async with await Core.open(settings_for(tmp_path, llm_server, peer)) as core, \
            connected(core, pacing=FAST) as bot:
        original, original_root = await debated(bot, peer, "Postgres or DynamoDB?", DANA)
        hidden, hidden_root = await start(peer, peer.slash_command("debate-rematch", {"debate_id": original},
                                                                    user_id=LEE, channel_id=PRIVATE_CHANNEL))
        await finished(bot, peer, hidden_root)
        record = await core.store.get_debate(hidden, turns=False)
        assert record is not None and record.rematch_of == original and record.channel_private is True
        assert peer.messages[hidden_root]["channel_id"] == PRIVATE_CHANNEL
        shown = json.dumps([m["content"] for m in peer.channel_messages(original_root)])
        assert hidden not in shown and hidden_root not in shown and "Rematch" not in shown
        assert not [c for c in peer.calls if c.method == "POST" and c.path == f"/channels/{original_root}/messages"
                    and hidden in json.dumps(c.body)]

        # from a public channel, the original's thread names it, as before
        public, public_root = await start(peer, peer.slash_command("debate-rematch", {"debate_id": original},
                                                                    user_id=LEE, channel_id=SIDE_CHANNEL))
        await finished(bot, peer, public_root)
        await peer.wait_for(lambda: [m for m in peer.channel_messages(original_root) if public in m["content"]])
        (link,) = [m for m in peer.channel_messages(original_root) if public in m["content"]]
        assert link["content"].startswith("🔁 Rematch") and peer.messages[public_root]["channel_id"] == SIDE_CHANNEL
