"""`/debate-usage` through the real discord.py client against the Discord peer (issue 20): a server admin
sees the guild's spend this day and month against its budgets, anyone else their own; the numbers are the
sums of the costs the log recorded for every model call (debaters' turns and judge passes), and another
guild's or Slack's spend is never in them."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.settings import BotSettings, load_settings
from orchestrator.app import Core
from tests.discord_harness import connected
from tests.fakes.discord_api import GUILD_ID, MEMBER_PERMISSIONS, TOKEN, DiscordPeer
from tests.usage_discord_harness import spend

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

ADMIN_PERMISSIONS = str(int(MEMBER_PERMISSIONS) | 1 << 3)  # Administrator
ME, OTHER, ADMIN = "740000000000000301", "740000000000000302", "740000000000000303"


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS) as server:
        yield server


@pytest.fixture
def settings(tmp_path: Path, peer: DiscordPeer) -> BotSettings:
    return load_settings(DEBATE_DB=str(tmp_path / "debates.db"), DISCORD_BOT_TOKEN=TOKEN,
                         DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
                         DEBATE_BUDGET_USD_PER_USER_DAY="3", DEBATE_BUDGET_USD_PER_WORKSPACE_DAY="25",
                         DEBATE_BUDGET_USD_PER_MONTH="900")


def described(answers: list[dict[str, Any]]) -> str:
    return json.dumps(answers, ensure_ascii=False)


async def test_usage_shows_an_admin_the_servers_spend_and_anyone_else_their_own(
    settings: BotSettings, peer: DiscordPeer
) -> None:
    async with await Core.open(settings) as core, connected(core):
        await spend(core.store, ME, 100_000, 50_000)
        await spend(core.store, OTHER, 200_000, 0)
        await spend(core.store, ME, 900_000, 0, workspace="720000000000000099")  # another guild
        await spend(core.store, ME, 900_000, 0, platform="slack", workspace="T1")
        calls = await core.store.spent_calls(time.time() - 3600)
        here = [c for c in calls if c.platform == "discord" and c.workspace == GUILD_ID]
        mine = sum(c.cost_usd or 0.0 for c in here if c.user == ME)
        guild = sum(c.cost_usd or 0.0 for c in here)
        everyone = sum(c.cost_usd or 0.0 for c in calls)
        assert 0 < mine < guild < everyone

        record = await peer.dispatch_interaction(peer.slash_command("debate-usage", user_id=ME,
                                                                    permissions=MEMBER_PERMISSIONS))
        await peer.wait_for(lambda: record.ephemeral)
        own = described(record.answers)
        assert "Your model spend" in own and f"You spent ${mine:,.4f} today of $3.00" in own, own
        assert "DEBATE_BUDGET_USD_PER_USER_DAY" in own and f"${3 - mine:,.2f} left" in own

        record = await peer.dispatch_interaction(peer.slash_command("debate-usage", user_id=ADMIN,
                                                                    permissions=ADMIN_PERMISSIONS))
        await peer.wait_for(lambda: record.ephemeral)
        admin = described(record.answers)
        assert "This server's model spend" in admin, admin
        assert f"This server spent ${guild:,.4f} today of $25.00 (DEBATE_BUDGET_USD_PER_WORKSPACE_DAY" in admin
        assert f"This server's share of the bot's monthly budget: ${guild:,.4f} of $900.00" in admin, admin
        assert f"{everyone:,.4f}" not in admin and f"{900 - everyone:,.2f}" not in admin, "never the total"
        assert "whole bot" not in admin
        assert "allowed_mentions" not in admin or '"parse": []' in admin
