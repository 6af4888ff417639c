"""The brief from Discord, through the real discord.py client against the loopback Discord peer: `/debate`'s
`context` attachment and `context_url` link, and the **Debate this** message menu on a thread's message
with an attachment, each start a debate whose brief holds them, listed in the root message."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bots.settings import load_settings
from orchestrator.app import Core
from orchestrator.config import Settings
from tests.discord_harness import connected
from tests.discord_team_harness import FAST
from tests.fakes.discord_api import CHANNEL_ID, MEMBER_PERMISSIONS, TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.web_source import SourceServer
from tests.llm_scripts import script_judge
from tests.pdf_maker import make_pdf

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

GPT, CLAUDE = "openai:gpt-5", "anthropic:claude-sonnet-4-6"


@pytest.fixture
async def peer() -> AsyncIterator[DiscordPeer]:
    async with DiscordPeer(everyone_permissions=MEMBER_PERMISSIONS) as server:
        yield server


@pytest.fixture
async def web() -> AsyncIterator[SourceServer]:
    async with SourceServer() as server:
        server.pages["/runbook.md"] = ("text/markdown", b"# Runbook\nRestart the consumer before the producer.")
        yield server


@pytest.fixture
def settings(tmp_path: Path, llm_server: FakeLLMServer, peer: DiscordPeer, web: SourceServer) -> Settings:
    return load_settings(
        DEBATE_DB=str(tmp_path / "debates.db"),
        OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=llm_server.openai_base_url,
        ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=llm_server.anthropic_base_url,
        DEBATE_MAX_RETRIES=0, DEBATE_CHAT_MODELS="openai:*,anthropic:*", DEBATE_ROUNDS=1,
        DEBATE_PROPOSER=GPT, DEBATE_CHALLENGER=CLAUDE, DEBATE_JUDGE="openai:judge-1",
        DEBATE_FETCH_ALLOW_HOSTS=web.allow_hosts,
        DISCORD_BOT_TOKEN=TOKEN, DISCORD_API_BASE_URL=peer.api_base_url, DISCORD_GATEWAY_URL=peer.gateway_url,
    )


@pytest.fixture
async def core(settings: Settings) -> AsyncIterator[Core]:
    async with await Core.open(settings) as opened:
        yield opened


async def finished(core: Core) -> str:
    (summary,) = await core.store.history(5)
    return summary.id


async def test_the_context_options_read_an_attachment_and_a_link(core: Core, peer: DiscordPeer, web: SourceServer,
                                                                 llm_server: FakeLLMServer) -> None:
    script_judge(llm_server, "A")
    llm_server.default = Reply(text='Per [S2 "Restart the consumer before the producer"] and [S1 p.1 "Move ingest '
                                    'to a queue in Q4"], yes.')  # one quote is in the brief, one is not (Q4)
    async with connected(core, pacing=FAST) as bot:
        option, resolved = peer.attachment_option("context", "plan.pdf", "application/pdf",
                                                  make_pdf(["Move ingest to a queue in Q3."], title="Q3 plan"))
        payload = peer.slash_command("debate", {"topic": "Queue in Q3?", "context_url": web.url("/runbook.md")})
        payload["data"]["options"].append(option)
        payload["data"]["resolved"] = resolved
        record = await peer.dispatch_interaction(payload)
        await peer.wait_for(lambda: record.original is not None, within=20)
        await peer.wait_for(lambda: "Finished" in json.dumps(peer.messages[record.original]["embeds"]), within=60)
        await bot.output.rendered()
        debate = await core.debate(await finished(core))
        assert debate is not None and debate.status == "completed"
        assert [(s.label, s.kind, s.title) for s in debate.sources] == [("S1", "pdf", "Q3 plan"),
                                                                       ("S2", "markdown", "Runbook")]
        root = json.dumps(peer.messages[record.original]["embeds"], ensure_ascii=False)
        assert "S1 · Q3 plan (pdf" in root and "S2 · Runbook (markdown" in root and web.url("/runbook.md") in root
        prompts = [r.last_user for r in llm_server.requests if "<source " in r.last_user]
        assert prompts and all("| Move ingest to a queue in Q3." in p and
                               "| Restart the consumer before the producer." in p for p in prompts)
        # under each turn, one line of what checking its citations found
        lines = [m for m in peer.messages.values()
                 if "Evidence: 2 cited · 1 verified · 1 not found" in json.dumps(m, ensure_ascii=False)]
        assert len(lines) == len(debate.turns) == 2


async def test_debate_this_on_a_threads_message_reads_it_its_file_and_the_thread(
    core: Core, peer: DiscordPeer, llm_server: FakeLLMServer
) -> None:
    script_judge(llm_server, "A")
    async with connected(core, pacing=FAST) as bot:
        opener = peer.say(CHANNEL_ID, "Incident review for the May outage")
        thread = await peer.open_thread(CHANNEL_ID, opener["id"], "May outage")
        peer.say(thread["id"], "The batch job held the lock for 40 minutes.", user_id="740000000000000004")
        clicked = peer.say(thread["id"], "Should we split the batch job?\nNotes attached.",
                           attachments=(("notes.txt", "text/plain", b"Splitting costs two sprints."),))
        menu = await peer.dispatch_interaction(peer.message_command("Debate this", clicked["id"]))
        await peer.wait_for(lambda: menu.modal is not None, within=10)
        assert "Should we split the batch job?" in json.dumps(menu.modal)
        form = await peer.dispatch_interaction(peer.modal_submit(menu, {"topic": "Should we split the batch job?"}))
        await peer.wait_for(lambda: form.original is not None, within=20)
        await peer.wait_for(lambda: any("Finished" in json.dumps(m.get("embeds")) for m in
                                        peer.channel_messages(CHANNEL_ID)), within=60)
        await bot.output.rendered()
        debate_id = await finished(core)
        debate = await core.debate(debate_id)
        assert debate is not None and debate.channel == CHANNEL_ID  # in the thread's channel, not the thread
        assert [(s.label, s.kind) for s in debate.sources] == [("S1", "message"), ("S2", "text"), ("S3", "thread")]
        assert "Splitting costs two sprints." in debate.sources[1].text
        assert "held the lock for 40 minutes" in debate.sources[2].text
        assert "Should we split" not in debate.sources[2].text  # the clicked message is S1, not again in S3


async def test_debate_this_on_a_message_with_nothing_to_read_starts_nothing(core: Core, peer: DiscordPeer) -> None:
    async with connected(core, pacing=FAST):
        empty = peer.say(CHANNEL_ID, "")
        menu = await peer.dispatch_interaction(peer.message_command("Debate this", empty["id"]))
        await peer.wait_for(lambda: menu.modal is not None, within=10)
        form = await peer.dispatch_interaction(peer.modal_submit(menu, {"topic": "Anything?"}))
        await peer.wait_for(lambda: form.ephemeral, within=20)
        assert "no text, files or thread to debate" in json.dumps(form.ephemeral)
        assert await core.store.history(5) == []
