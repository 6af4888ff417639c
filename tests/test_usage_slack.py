"""`/debate usage` and the App Home's spend, through bolt's real dispatch against the Slack API peer
(issue 20): an admin sees the workspace's spend this day and month against its budgets, anyone else
their own, and the numbers are the sums of the costs the log recorded for every model call; `/debate
models` says how a model with no known price is counted."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.budgets import month_start
from tests.admission_slack_harness import LIMITS
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge
from tests.slack_team_harness import answer, ask, debated
from tests.slack_tenancy_harness import open_home
from tests.usage_discord_harness import spend

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        p.declare_user("U9", "admin")
        yield p


async def test_usage_shows_an_admin_the_workspace_and_anyone_else_their_own_spend(
    tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    script_judge(llm_server, "A")
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url,
                              DEBATE_BUDGET_USD_PER_WORKSPACE_DAY="40", DEBATE_BUDGET_USD_PER_MONTH="900",
                              DEBATE_CHAT_MODELS="openai:*,anthropic:*")
    async with SlackBot(settings, LIMITS) as bot:
        await debated(bot, peer, "Tabs or spaces? --rounds 1", user="U1")
        await debated(bot, peer, "Kafka or NATS? --rounds 1", user="U2")
        calls = await bot.core.store.spent_calls(month_start(time.time()))
        assert len(calls) == len(llm_server.requests), "every model call is in the log"
        assert all(c.cost_usd is not None for c in calls)
        mine = sum(c.cost_usd or 0.0 for c in calls if c.user == "U1")
        everyone = sum(c.cost_usd or 0.0 for c in calls)
        assert 0 < mine < everyone

        own = await answer(peer, await ask(bot, peer, "usage", user="U1"))
        assert own.startswith("*Your model spend*") and f"You spent ${mine:,.4f} today" in own, own
        assert f"You spent ${mine:,.4f} this month" in own and "U2" not in own
        nothing = await answer(peer, await ask(bot, peer, "usage", user="U3"))
        assert "You spent $0.0000 today" in nothing

        # another workspace's spend, this month: never in this workspace's answers (issue 57 item 6)
        await spend(bot.core.store, "U7", 300_000, 0, platform="slack", workspace="T2")
        deployment = sum(c.counted_usd for c in await bot.core.store.spent_calls(month_start(time.time())))
        admin = await answer(peer, await ask(bot, peer, "usage", user="U9"))
        assert admin.startswith("*This workspace's model spend*"), admin
        assert f"This workspace spent ${everyone:,.4f} today of $40.00 (DEBATE_BUDGET_USD_PER_WORKSPACE_DAY;" in admin
        assert f"${40 - everyone:,.2f} left" in admin
        assert (f"This workspace's share of the bot's monthly budget: ${everyone:,.4f} of $900.00 "
                f"({everyone / 900:.1%}; DEBATE_BUDGET_USD_PER_MONTH") in admin, admin
        assert f"{deployment:,.4f}" not in admin and f"{900 - deployment:,.2f}" not in admin, "never the total"
        assert "whole bot" not in admin
        assert "Calibration: no debate with a rated verdict has side votes yet." in admin  # no side votes yet

        await open_home(bot, "U9")
        await open_home(bot, "U1")
        await bot.settle()
        home = json.dumps(peer.views["U9"])
        assert "Model spend" in home and f"${everyone:,.4f} today" in home and "Tabs or spaces?" in home
        assert "Model spend" not in json.dumps(peer.views["U1"]), "only admins see the workspace's spend"

        models = await answer(peer, await ask(bot, peer, "models", user="U1"))
        assert "no known price counts at its vendor's highest known price" in models

        # a topic that starts with the word is the command (issue 57) unless it is quoted
        assert await debated(bot, peer, '"usage based pricing or seats?" --rounds 1', user="U1")
