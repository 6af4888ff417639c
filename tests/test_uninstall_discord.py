"""The bot removed from a Discord guild (issue 55), through the real discord.py client and the Discord peer's
gateway: GUILD_DELETE stops the guild's running debate and purges its data (another guild's stays), with an
audit entry."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orchestrator.app import Core
from orchestrator.config import Settings
from tests.discord_harness import connected
from tests.discord_tenancy_harness import INSIDER, OTHER_GUILD, _start_held, peer, settings  # noqa: F401
from tests.fakes.discord_api import GUILD_ID, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer
from tests.purge_log_harness import NOON
from tests.purge_log_harness import debate as seed

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


def observed(core: Core) -> asyncio.Event:
    """Set once `core.workspace_removed` has returned: what a gateway event starts runs in discord.py's task."""
    done = asyncio.Event()
    removed = core.workspace_removed

    async def removed_then_set(*args: Any, **kwargs: Any) -> Any:
        try:
            return await removed(*args, **kwargs)
        finally:
            done.set()

    core.workspace_removed = removed_then_set  # type: ignore[method-assign]
    return done


async def test_removed_from_a_guild_the_bot_stops_and_purges_its_debates(
    settings: Settings, peer: DiscordPeer, llm_server: FakeLLMServer  # noqa: F811
) -> None:
    async with await Core.open(settings) as core, connected(core):
        ended = await seed(core.store, INSIDER, NOON, workspace=GUILD_ID, word="ended", platform="discord")
        other = await seed(core.store, INSIDER, NOON, workspace=OTHER_GUILD, word="other", platform="discord")
        running, gate = await _start_held(peer, llm_server, core, INSIDER)

        done = observed(core)

        await peer.dispatch("GUILD_DELETE", {"id": GUILD_ID, "guild_id": GUILD_ID})

        await asyncio.wait_for(done.wait(), 30)
        gate.set()
        assert await core.store.purged(running) is not None and await core.store.purged(ended) is not None
        assert await core.store.get_debate(running) is None and await core.store.get_debate(ended) is None
        assert await core.store.get_debate(other) is not None, "another guild's data stays"
        trail = [(e.action, e.who, e.workspace) for e in await core.store.audit(0.0)]
        assert ("uninstall", "discord", GUILD_ID) in trail and ("purge", "discord", GUILD_ID) in trail
