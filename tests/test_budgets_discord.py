"""Spend budgets in Discord, through the real discord.py client against the Discord peer (issue 20): once
the spend a first process recorded plus a debate's estimate would pass the server's day budget, `/debate`,
`/debate-continue` and `/debate-rematch` are refused privately, naming the variable, and nothing is posted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.app import Core
from orchestrator.budgets import estimate_usd, month_start
from tests.admission_discord_harness import DANA, LEE, debated, settings_for
from tests.budgets_slack_harness import LONG
from tests.discord_harness import connected
from tests.discord_team_harness import FAST, SIDE_CHANNEL, ask, options
from tests.fakes.discord_api import MEMBER_PERMISSIONS, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import is_judge, script_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

VARIABLE = "DEBATE_BUDGET_USD_PER_WORKSPACE_DAY"


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS) as server:
        server.add_channel(SIDE_CHANNEL, "random")
        yield server


async def test_the_servers_budget_refuses_a_start_a_continue_and_a_rematch_privately(
    tmp_path: Path, peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    llm_server.add_rule(Reply(text=LONG), match=lambda r: not is_judge(r))
    script_judge(llm_server, "A")
    async with await Core.open(settings_for(tmp_path, llm_server, peer)) as core, connected(core, pacing=FAST) as bot:
        done, _ = await debated(bot, peer, "Tabs or spaces?", DANA)
        record = await core.store.get_debate(done, turns=False)
        assert record is not None and record.spec is not None
        recorded = sum(c.counted_usd for c in await core.store.spent_calls(month_start(record.created_at)))
    assert recorded > 0.01
    budget = estimate_usd(record.spec) + recorded / 2

    settings = settings_for(tmp_path, llm_server, peer).model_copy(
        update={"debate_budget_usd_per_workspace_day": budget})
    async with await Core.open(settings) as core, connected(core, pacing=FAST):  # a second process, same log
        threads = len(peer.threads())
        for payload in (peer.slash_command("debate", options("Kafka or NATS?"), user_id=LEE),
                        peer.slash_command("debate-continue", {"debate_id": done}, user_id=LEE),
                        peer.slash_command("debate-rematch", {"debate_id": done}, user_id=LEE,
                                           channel_id=SIDE_CHANNEL)):
            said = await ask(peer, payload)
            assert VARIABLE in said and "is left of the" in said and "resets at" in said, said
        assert len(peer.threads()) == threads, "nothing is posted for a refused start"
        again = await core.store.get_debate(done, turns=False)
        assert again is not None and (again.status, again.segment) == ("completed", 1)
