"""Debates the log calls running with no workflow behind them (logged by a version before durable debates,
or whose workflow database was lost): `debate serve` starts, its tailer fails them and their root messages
say so, on both platforms. Debates with a workflow resume instead (tests/test_durable_serve.py).

The previous process is played by hand: root messages posted to the Slack and Discord peers, debates logged
as "running" with those roots recorded. Then Slack (`run_slack`, HTTP mode) and Discord (`run_discord`,
through the gateway) start on one Core, as `debate serve` runs them, against the loopback peers.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.web.async_client import AsyncWebClient

from bots.discord import run_discord
from bots.discord.render import root_embed
from bots.settings import load_settings
from bots.slack import blocks
from bots.slack.oauth import AsyncSQLiteInstallationStore, install_db_path
from bots.slack.runtime import SlackRuntime
from bots.slack.serve import run_slack
from bots.thread.tail import NO_RESULT
from orchestrator.app import Core
from orchestrator.config import Settings
from orchestrator.log import DebateLog, Store
from orchestrator.models import DebateSpec, Seat, Turn, now
from tests.fakes.discord_api import CHANNEL_ID, TOKEN, DiscordPeer
from tests.fakes.slack_api import SIGNING_SECRET, SlackAPIPeer

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

SLACK_CHANNEL = "C1"
SLACK_TOKEN = "xoxb-test-token"


def _settings(tmp_path: Path, slack: SlackAPIPeer, discord_peer: DiscordPeer, **extra: object) -> Settings:
    values: dict[str, object] = {
        "DEBATE_DB": str(tmp_path / "debates.db"),
        "SLACK_BOT_TOKEN": SLACK_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_API_BASE_URL": slack.base_url,
        "DISCORD_BOT_TOKEN": TOKEN, "DISCORD_API_BASE_URL": discord_peer.api_base_url,
        "DISCORD_GATEWAY_URL": discord_peer.gateway_url,
    }
    return load_settings(**{**values, **extra})


def _spec(platform: str, channel: str, topic: str) -> DebateSpec:
    seats = (Seat(label="A", role="proposer", model="openai:gpt-5"),
             Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-6"))
    return DebateSpec(topic=topic, seats=seats, judge="openai:gpt-5", platform=platform, channel=channel)


async def _slack_root(client: AsyncWebClient, spec: DebateSpec) -> str:
    text, root_blocks = blocks.root_message(spec, "running", "round 1 of 2")
    response = await client.chat_postMessage(channel=SLACK_CHANNEL, text=text, blocks=root_blocks)
    return str(response["ts"])


async def _discord_root(peer: DiscordPeer, spec: DebateSpec) -> str:
    """The root message and the thread on it (a thread on a message has the message's id)."""
    body = {"embeds": [root_embed(spec, status="⏳ Round 1 of 2").to_dict()]}
    auth = {"Authorization": f"Bot {TOKEN}"}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{peer.api_base_url}/channels/{CHANNEL_ID}/messages", json=body, headers=auth) as r:
            root = str((await r.json())["id"])
        async with http.post(f"{peer.api_base_url}/channels/{CHANNEL_ID}/messages/{root}/threads",
                             json={"name": spec.topic[:90]}, headers=auth) as r:
            assert r.status == 201
    return root


async def test_a_restart_marks_cut_off_debates_on_their_root_messages(tmp_path: Path) -> None:
    async with SlackAPIPeer() as slack, DiscordPeer(rate_limit=(5, 5.0)) as discord_peer:
        settings = _settings(tmp_path, slack, discord_peer)

        # the process before the restart: four debates running, their roots posted; two roots since deleted
        slack_spec = _spec("slack", SLACK_CHANNEL, "Tabs or spaces?")
        slack_gone = _spec("slack", SLACK_CHANNEL, "Vim or Emacs?")
        discord_spec = _spec("discord", CHANNEL_ID, "Monorepo or polyrepo?")
        discord_gone = _spec("discord", CHANNEL_ID, "REST or GraphQL?")
        slack_client = AsyncWebClient(token=SLACK_TOKEN, base_url=slack.base_url)
        roots = {
            slack_spec.id: await _slack_root(slack_client, slack_spec),
            slack_gone.id: "1699999999.000001",
            discord_spec.id: await _discord_root(discord_peer, discord_spec),
            discord_gone.id: "912345678901234567",
        }
        async with Store(settings.debate_db) as store:
            for spec in (slack_spec, slack_gone, discord_spec, discord_gone):
                workspace = "T1" if spec is slack_spec else None
                await store.create_debate(spec.model_copy(update={"thread": roots[spec.id], "workspace": workspace}))
                await store.set_message(spec.id, "root", spec.platform, spec.channel, roots[spec.id])
            await store.add_turn(Turn(debate_id=slack_spec.id, round=1, seat="A", role="proposer", kind="opening",
                                      model="openai:gpt-5", text="Tabs.", started_at=now(), input_tokens=100,
                                      output_tokens=50))
        slack_posts = len(slack.calls)

        async with await Core.open(settings) as core:
            stop = asyncio.Event()
            runtimes: list[SlackRuntime] = []
            async with asyncio.TaskGroup() as group:
                group.create_task(run_slack(core, "127.0.0.1", 0, stop, socket_mode=False,
                                            runtime_ready=runtimes.append))
                group.create_task(run_discord(core, stop, guild_ready_timeout=0.05))

                def slack_edits(ts: str) -> list[dict[str, object]]:
                    return [c.params for c in slack.of("chat.update") if c.params.get("ts") == ts]

                def discord_edits(message_id: str) -> list[tuple[int, str | None, object]]:
                    path = f"/channels/{CHANNEL_ID}/messages/{message_id}"
                    return [(c.status, c.auth, c.body) for c in discord_peer.calls
                            if c.method == "PATCH" and c.path == path]

                await slack.wait_for(lambda p: slack_edits(roots[slack_spec.id])
                                     and slack_edits(roots[slack_gone.id]), within=10)
                await discord_peer.wait_for(lambda: discord_edits(roots[discord_spec.id])
                                            and discord_edits(roots[discord_gone.id]), within=10)
                await discord_peer.wait_for(lambda: discord_peer.identifies == 1, within=5)  # startup went on
                await runtimes[0].idle()
                # the live roots' last edits are recorded final once answered: stop only after that, or
                # the next start would rightly try them again
                await _until_final(core.store, [slack_spec.id, discord_spec.id])
                stop.set()

            # Slack: the root now shows the failed state the sink renders, with what the turns used
            (edit,) = slack_edits(roots[slack_spec.id])
            shown = json.dumps(slack.message(SLACK_CHANNEL, roots[slack_spec.id]).blocks, ensure_ascii=False)
            assert NO_RESULT in shown and ":x: *failed*" in shown and "150 tokens" in shown
            assert edit["token"] == SLACK_TOKEN and NO_RESULT in json.dumps(edit["blocks"], ensure_ascii=False)
            (gone,) = [c for c in slack.of("chat.update") if c.params.get("ts") == roots[slack_gone.id]]
            assert gone.error == "message_not_found"
            assert len(slack.calls[slack_posts:]) == len(slack.of("chat.update")) == 2  # nothing else was sent

            # Discord: one paced edit with the bot token, no mentions, the failed state on the root embed
            ((status, auth, body),) = discord_edits(roots[discord_spec.id])
            assert status == 200 and auth == f"Bot {TOKEN}" and body["allowed_mentions"]["parse"] == []
            embed = discord_peer.messages[roots[discord_spec.id]]["embeds"][0]
            status_field = next(f["value"] for f in embed["fields"] if f["name"] == "Status")
            assert status_field.startswith(f"❌ Failed: {NO_RESULT}")
            assert [s for s, _a, _b in discord_edits(roots[discord_gone.id])] == [404]

            for debate_id in roots:
                record = await core.store.get_debate(debate_id)
                assert record is not None and (record.status, record.error) == ("failed", NO_RESULT)

        async with await Core.open(settings) as core:  # the next start has no live debate left to resume
            for platform in ("slack", "discord"):  # a root that is gone is only tried again
                assert set(await core.store.threads_to_resume(platform, "root")) <= {slack_gone.id, discord_gone.id}


async def test_with_several_workspaces_each_root_is_edited_with_its_workspace_bot_token(tmp_path: Path) -> None:
    async with SlackAPIPeer() as slack, DiscordPeer() as discord_peer:
        settings = _settings(tmp_path, slack, discord_peer, SLACK_BOT_TOKEN=None, SLACK_CLIENT_ID="111.222",
                             SLACK_CLIENT_SECRET="shh-secret")
        installations = AsyncSQLiteInstallationStore(database=str(install_db_path(settings)), client_id="111.222")
        installations.init()
        await installations.async_save(Installation(
            app_id="A1", enterprise_id=None, team_id="T9", user_id="U9", bot_token="xoxb-installed",
            bot_id="BBOT", bot_user_id="UBOT", bot_scopes=["commands", "chat:write"]))
        client = AsyncWebClient(token="xoxb-installed", base_url=slack.base_url)
        installed = _spec("slack", SLACK_CHANNEL, "Tabs or spaces?")
        uninstalled = _spec("slack", SLACK_CHANNEL, "Vim or Emacs?")
        roots = {spec.id: await _slack_root(client, spec) for spec in (installed, uninstalled)}
        async with Store(settings.debate_db) as store:
            for spec, team in ((installed, "T9"), (uninstalled, "T8")):
                await store.create_debate(spec.model_copy(update={"thread": roots[spec.id], "workspace": team}))
                await store.set_message(spec.id, "root", "slack", SLACK_CHANNEL, roots[spec.id])

        async with await Core.open(settings) as core:
            stop = asyncio.Event()
            runtimes: list[SlackRuntime] = []
            serving = asyncio.create_task(run_slack(core, "127.0.0.1", 0, stop, socket_mode=False,
                                                    runtime_ready=runtimes.append))
            try:
                await slack.wait_for(lambda p: p.of("chat.update"), within=10)
                await runtimes[0].idle()
            finally:
                stop.set()
                await serving

        (edit,) = slack.of("chat.update")  # the workspace that uninstalled the app is skipped
        assert edit.params["ts"] == roots[installed.id] and edit.params["token"] == "xoxb-installed"
        assert NO_RESULT in json.dumps(slack.message(SLACK_CHANNEL, roots[installed.id]).blocks, ensure_ascii=False)


async def _until_final(store: DebateLog, debate_ids: list[str], within: float = 10.0) -> None:
    async def final(debate_id: str) -> bool:
        root = (await store.messages(debate_id)).get("root")
        return root is not None and root.final

    async def all_final() -> None:
        while not all([await final(d) for d in debate_ids]):  # noqa: ASYNC110 (the log notifies nobody)
            await asyncio.sleep(0.05)

    await asyncio.wait_for(all_final(), within)
