"""The brief from Slack, through bolt's real dispatch and the loopback Slack Web API peer: **Debate this** on a
message with a file and a thread starts a debate whose brief holds all three; `/debate TOPIC --context URL`
fetches a loopback page named in DEBATE_FETCH_ALLOW_HOSTS; the root message lists the sources; a link to a
Slack file of another channel is refused; a private channel's brief never shows in a public channel's
recall, unfurl or page link."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bots.slack.surface import slack_limits
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, shortcut_payload, slack_settings, view_submission_payload
from tests.fakes.web_source import SourceServer
from tests.llm_scripts import is_judge, script_judge
from tests.pdf_maker import make_pdf

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

TOPIC_LINE = "Should we move ingest to a queue?"


def briefed(llm: FakeLLMServer) -> list[str]:
    return [r.last_user for r in llm.requests if "<source " in r.last_user]


async def test_debate_this_reads_the_message_its_file_and_its_thread(tmp_path: Path) -> None:
    limits = slack_limits(post_interval=0.01, updates=600, window=60.0, edit_interval=0.05, streams=False)
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A")
        llm.default = Reply(text='Per [S2 p.1 "a lock for 40 minutes"], yes.')
        peer.add_file("F0RFC0001", "rfc.pdf", "application/pdf",
                      make_pdf(["The batch job held a lock for 40 minutes."], title="Ingest RFC"), ("C9",))
        root = peer.say("C9", f"{TOPIC_LINE}\nThe RFC is attached; <@U7> disagrees.", files=("F0RFC0001",))
        peer.say("C9", "I think the queue adds an on-call burden we cannot staff.", user="U7", thread_ts=root.ts)
        peer.say("C9", "The vendor quote was 12k a year.", user="U8", thread_ts=root.ts)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  DEBATE_ROUNDS=1)
        async with SlackBot(settings, limits) as bot:
            status, _ = await bot.interact(shortcut_payload(peer.message("C9", root.ts), "debate_this",
                                                            response_url=peer.response_url()))
            assert status == 200
            await bot.settle()
            (modal,) = peer.opened
            (topic,) = [b for b in modal["blocks"] if b.get("block_id") == "topic"]
            assert topic["element"]["initial_value"] == TOPIC_LINE

            status, _ = await bot.interact(view_submission_payload(modal, {"topic": TOPIC_LINE}))
            assert status == 200
            await bot.settle()
            (summary,) = await bot.core.store.history(5)
            record = await bot.core.store.get_debate(summary.id)
            assert record is not None and record.status == "completed", record
            assert [(s.label, s.kind) for s in record.sources] == [("S1", "message"), ("S2", "pdf"), ("S3", "thread")]
            assert "@U7 disagrees" in record.sources[0].text and record.sources[1].title == "Ingest RFC"
            assert "on-call burden" in record.sources[2].text and "12k a year" in record.sources[2].text
            assert peer.downloads == [("F0RFC0001", "Bearer xoxb-test-token")]  # with the bot token, once

            prompts = briefed(llm)
            assert len(prompts) == len([r for r in llm.requests if r.model != "judge" or is_judge(r)])
            for prompt in prompts:
                assert '<source id="S2" anchor="p.1" title="Ingest RFC" kind="pdf">' in prompt
                assert "| U8: The vendor quote was 12k a year." in prompt

            listed = json.dumps(peer.message("C9", record.thread or "").blocks, ensure_ascii=False)
            assert "*Brief*" in listed and "S2 · Ingest RFC (pdf" in listed and "S3 · Thread (2 replies)" in listed
            # under each debater's turn, the line of what checking its citation found (counts only, no ping)
            shown = [json.dumps(m.blocks, ensure_ascii=False) + m.text for m in peer.thread("C9", record.thread or "")]
            evidence = [m for m in shown if "Evidence: 1 cited · 1 verified" in m]
            assert len(evidence) == len([t for t in record.turns if t.status == "ok"]) == 2
            assert record.verdict is not None and record.verdict.evidence_counts()["A"]["verified"] == 1


async def test_context_links_a_refused_one_and_a_slack_file_of_another_channel(tmp_path: Path) -> None:
    limits = slack_limits(post_interval=0.01, updates=600, window=60.0, edit_interval=0.05, streams=False)
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm, SourceServer() as web:
        script_judge(llm, "A")
        web.pages["/wiki/ingest.md"] = ("text/markdown", b"# Ingest\nThe queue pilot ran for two weeks.")
        peer.add_file("F0SECRET01", "salaries.txt", "text/plain", b"Pay bands", ("G5",))
        peer.add_file("F0SHARED01", "pilot.md", "text/markdown", b"# Pilot\nTwo weeks, no data loss.", ("C9",))
        peer.declare_channel("G5", "private")
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  DEBATE_ROUNDS=1, DEBATE_FETCH_ALLOW_HOSTS=web.allow_hosts)
        async with SlackBot(settings, limits) as bot:
            await bot.command(f"Queue or not? --context {web.url('/wiki/ingest.md')} --context "
                              f"http://10.0.0.1/admin --context <{peer.file_url('F0SHARED01')}>", peer, channel="C9")
            await bot.settle()
            (summary,) = await bot.core.store.history(5)
            record = await bot.core.store.get_debate(summary.id)
            assert record is not None
            assert [s.origin for s in record.sources] == ["pilot.md", web.url("/wiki/ingest.md")]
            assert peer.downloads == [("F0SHARED01", "Bearer xoxb-test-token")]  # this channel's file, by token
            assert [r["path"] for r in web.requests] == ["/wiki/ingest.md"]
            assert "Authorization" not in web.requests[0]["headers"]  # the bot token never goes to a typed link
            refused = [n.text for n in record.notices if "10.0.0.1" in n.text]
            assert len(refused) == 1 and "private address" in refused[0]  # a note, and the debate went on
            thread = json.dumps([m.text for m in peer.thread("C9", record.thread or "")] +
                                [json.dumps(m.blocks) for m in peer.thread("C9", record.thread or "")])
            assert "10.0.0.1" in thread
            root = json.dumps(peer.message("C9", record.thread or "").blocks)
            assert f"<{web.url('/wiki/ingest.md')}|link>" in root

            await bot.command(f"Pay? --context {peer.file_url('F0SECRET01')}", peer, channel="C9")
            await bot.settle()
            assert len(await bot.core.store.history(5)) == 1  # nothing started
            told = [c.params.get("text", "") for c in peer.of("response_url")]
            assert any("not shared in this channel" in t for t in told), told
            assert [d[0] for d in peer.downloads] == ["F0SHARED01"]  # the other channel's file never was

            await bot.command(f"rematch {record.id}", peer, channel="C9")  # a rematch keeps the brief
            await bot.settle()
            again = [d for d in await bot.core.store.history(5) if d.id != record.id]
            assert len(again) == 1
            rematch = await bot.core.store.get_debate(again[0].id)
            assert rematch is not None and rematch.rematch_of == record.id
            assert [(s.origin, s.sha256) for s in rematch.sources] == [(s.origin, s.sha256) for s in record.sources]


async def test_a_private_channels_brief_stays_out_of_public_recall_unfurls_and_links(tmp_path: Path) -> None:
    from bots.page import page_link
    from tests.page_harness import PUBLIC_URL

    limits = slack_limits(post_interval=0.01, updates=600, window=60.0, edit_interval=0.05, streams=False)
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm, SourceServer() as web:
        script_judge(llm, "A")
        peer.declare_channel("G2", "private")
        web.pages["/salaries.md"] = ("text/markdown", b"# Pay\nThe quillwort band starts at 90k.")
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  DEBATE_ROUNDS=1, DEBATE_FETCH_ALLOW_HOSTS=web.allow_hosts,
                                  DEBATE_PUBLIC_URL=PUBLIC_URL, DEBATE_WEB_SECRET="brief-page-secret-0123456789abcdef")
        async with SlackBot(settings, limits) as bot:
            await bot.command(f"Raise the bands? --context {web.url('/salaries.md')}", peer, channel="G2")
            await bot.settle()
            (summary,) = await bot.core.store.history(5)
            link = await page_link(bot.core.store, bot.settings, summary.id)
            assert link is not None

            async def answer(text: str, channel: str) -> str:  # one at a time: answers come back in order
                await bot.command(text, peer, channel=channel)
                await bot.settle()
                last = peer.of("response_url")[-1].params
                return str(last.get("text", "")) + json.dumps(last.get("blocks") or [])

            public = await answer("search quillwort", "C1")
            shown = await answer(f"show {summary.id}", "C1")
            private = await answer("search quillwort", "G2")
            assert public.startswith("Nothing found") and summary.id not in public and "90k" not in public
            assert summary.id not in shown or "No debate" in shown
            assert link not in public + shown and "/d/" not in public + shown
            assert summary.id in private  # inside its own channel, the brief is searched with the rest

            assert await peer.share_links(f"{bot.url}/slack/events", [link], channel="C1") == 200
            await bot.settle()
            assert not any(key[0] == "C1" for key in peer.unfurls)
            assert await peer.share_links(f"{bot.url}/slack/events", [link], channel="G2") == 200
            await peer.wait_for(lambda p: any(key[0] == "G2" for key in p.unfurls))


async def test_debate_this_on_a_message_the_bot_cannot_read_starts_nothing_and_says_why(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings) as bot:
            message = peer.say("G7", "Should we rotate the keys?")
            del peer.messages[("G7", message.ts)]  # gone, or in a channel the bot was never invited to
            await bot.interact(shortcut_payload(message, "debate_this", response_url=peer.response_url()))
            await bot.settle()
            (modal,) = peer.opened
            await bot.interact(view_submission_payload(modal, {"topic": "Should we rotate the keys?"}))
            await bot.settle()
            assert await bot.core.store.history(5) == [] and llm.requests == []
            (told,) = [c.params["text"] for c in peer.of("chat.postEphemeral")]
            assert "couldn't read that message" in told


async def test_an_evidence_line_that_comes_after_the_next_turn_began_names_its_turn(tmp_path: Path) -> None:
    """A's cited page answers only once B's turn has reached the model: A's check runs beside B's turn, and its
    line, posted below B's first message, says whose turn it is about."""
    limits = slack_limits(post_interval=0.01, updates=600, window=60.0, edit_interval=0.05, streams=False)
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm, SourceServer() as web:
        script_judge(llm, "A")
        web.pages["/pilot.md"] = ("text/markdown", b"# Pilot\nThe queue pilot ran for two weeks without loss.")
        gate = web.gates["/pilot.md"] = asyncio.Event()
        turns = iter([f'Per [{web.url("/pilot.md")} "ran for two weeks without loss"], yes.'])

        def debater(_body: dict[str, object]) -> str:
            text = next(turns, None)
            if text is None:  # the second debater's call: the page may answer now
                gate.set()
                return "No citations from me."
            return text

        llm.default = Reply(text=debater)
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url,
                                  DEBATE_ROUNDS=1, DEBATE_FETCH_ALLOW_HOSTS=web.allow_hosts)
        async with SlackBot(settings, limits) as bot:
            await bot.command(TOPIC_LINE, peer, channel="C9")
            await bot.settle()
            (summary,) = await bot.core.store.history(5)
            record = await bot.core.store.get_debate(summary.id)
            assert record is not None and record.status == "completed", record
            shown = [json.dumps(m.blocks, ensure_ascii=False) + m.text for m in peer.thread("C9", record.thread or "")]
            (line,) = [i for i, m in enumerate(shown) if "Evidence: 1 cited · 1 verified" in m]
            assert "(seat A, round 1)" in shown[line]
            assert any("No citations from me." in m for m in shown)  # B's turn, begun before the line came
