"""Turns read as the models wrote them: standard Markdown in Slack's `markdown` blocks through the real
bolt app and the Slack peer, split without cutting a table or a fence, inert (no ping, no link), with a
plain-text fallback; and the one Markdown → mrkdwn converter for the surfaces that take no markdown block."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bots.slack import blocks as slack_blocks
from bots.slack.markdown import MARKDOWN_LIMIT, neutralize_markdown, plain_text, to_mrkdwn
from bots.slack.surface import STREAM_LIMIT, slack_limits
from bots.thread.text import outside_code, split_message
from orchestrator.models import DebateSpec, Seat, Verdict
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import Message, SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import script_judge
from tests.slack_markdown_harness import turn_messages

TABLE = "| Option | Weekly cost | Risk |\n|---|---:|:---|\n| **Go** | 3 days | low |\n| Rust | 5 days | `unsafe` |"
FENCE = '```python\ndef ship(week: int) -> bool:\n    return week % 1 == 0 and "<!here>" != ""\n```'
TAIL = " ".join(f"Evidence from quarter {n} shows the cadence holds when the pipeline is green."
               for n in range(120))[:9000]  # long, and no loop (a loop would end the turn: repeats.py)
CORPUS = (
    "### Release cadence\n\n"
    "We should adopt **weekly releases**, not *monthly* ones. See [the dashboard](https://evil.example/dash) "
    "and tell <!channel> and @here.\n\n"
    "1. Ship on Tuesdays\n   - freeze on Monday\n   - roll back with `git revert`\n2. Review on Fridays\n\n"
    f"{TABLE}\n\n{FENCE}\n\n{TAIL}"
)
RECOMMENDATION = "**Adopt weekly releases.**\n\n- ship on Tuesdays\n  - freeze on Monday\n\n" + TABLE
PINGS = ("<!channel>", "<!here>", "<@U", "<!subteam")
MARKDOWN_PUNCTUATION = ("**", "###", "```", "`", "|", "](", "[the dashboard]")


def prose_of(markdown: str) -> str:
    """What of `markdown` is not code: where a link could render."""
    return outside_code(markdown, lambda text: text, lambda _code: "")


def rendered_links(markdown: str) -> list[str]:
    """Links a Markdown renderer would make of `markdown` outside code: inline, autolinks, Slack's own."""
    prose = prose_of(markdown)
    return re.findall(r"\]\(|<https?:|<mailto:|<(?!\u200b)[^>\s]*\|", prose)


@pytest.mark.slow
async def test_a_turn_arrives_as_markdown_blocks_split_whole_and_inert(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A", recommendation=RECOMMENDATION)
        llm.add_rule(Reply(text=CORPUS, tokens_per_s=4000), match="claude-sonnet-4-6")
        llm.add_rule(Reply(text="Monthly is safer."), match="gpt-5")
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        # posted and updated, so each message has its notification text (a native stream has none)
        async with SlackBot(settings, slack_limits(streams=False)) as bot:
            await bot.command("Weekly or monthly releases? --rounds 1", peer, channel="C7")
            await bot.settle()
            (summary,) = await bot.core.store.history(1)
            record = await bot.core.store.get_debate(summary.id)
            assert record is not None and record.status == "completed" and record.thread

            parts = await turn_messages(bot, peer, summary.id, "C7")
            assert len(parts) >= 3, "a 10,000-character turn continues over several messages"
            for part in parts:
                assert [b["type"] for b in part.blocks or []] == ["markdown"]
                assert len(part.markdown) <= STREAM_LIMIT
                assert part.markdown.count("```") % 2 == 0
            shown = "\n".join(p.markdown for p in parts)

            # the Markdown as the model wrote it: bold, heading, nested list, code
            assert parts[0].markdown.startswith("**A · proposer**")
            for kept in ("**weekly releases**", "*monthly*", "### Release cadence", "1. Ship on Tuesdays\n   - freeze",
                         "`git revert`"):
                assert kept in shown, kept
            # the table and the fence each whole in one message
            assert sum(TABLE in p.markdown for p in parts) == 1
            fence_shown = FENCE.replace("<!here>", "<\u200b!here>")
            assert sum(fence_shown in p.markdown for p in parts) == 1
            # no link, no ping
            assert "the dashboard" in shown and "evil.example" not in shown
            assert rendered_links(shown) == []
            for call in peer.calls:
                sent = json.dumps(call.params, ensure_ascii=False).replace("\\u200b", "\u200b")
                for ping in PINGS:
                    assert ping not in sent, (call.method, ping)
            assert "<\u200b!channel>" in shown and "@\u200bhere" in shown
            assert not re.search(r"&(lt|gt|amp);", shown), "a markdown block shows an entity as written"
            # the notification text: plain, no Markdown punctuation left over
            for part in parts:
                for mark in MARKDOWN_PUNCTUATION:
                    assert mark not in part.text, (mark, part.text[:200])
            assert "weekly releases" in parts[0].text and "Go · 3 days · low" in shown_plain(parts)

            # the verdict's recommendation: a markdown block keeping its list and table
            verdict = next(m for m in peer.thread("C7", record.thread) if m.blocks and
                           any(b["type"] == "actions" for b in m.blocks))
            assert "**Adopt weekly releases.**" in verdict.markdown and TABLE in verdict.markdown
            assert "|" not in verdict.text and "**" not in verdict.text


def shown_plain(parts: list[Message]) -> str:
    return "\n".join(p.text for p in parts)


@pytest.mark.slow
async def test_app_home_and_show_speak_mrkdwn_converted_from_the_same_markdown(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A", recommendation=RECOMMENDATION)
        llm.default = Reply(text="Short turn.")
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings) as bot:
            await bot.command("Weekly or monthly releases? --rounds 1", peer, channel="C7")
            await bot.settle()
            (summary,) = await bot.core.store.history(1)

            event = {"token": "legacy", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
                     "event_id": "Ev1", "event_time": 1,
                     "event": {"type": "app_home_opened", "user": "U1", "channel": "D1", "tab": "home"}}
            await bot.post(json.dumps(event), headers={"Content-Type": "application/json"})
            await bot.command(f"show {summary.id}", peer, channel="C7")
            await bot.settle()
            assert [c for c in peer.of("views.publish") if c.ok], "the peer refuses markdown blocks in views"
            home = json.dumps(peer.views["U1"], ensure_ascii=False)
            answer = next(c.params["text"] for c in peer.of("response_url") if summary.id in c.params.get("text", ""))
    for shown in (home, answer):
        assert "*Adopt weekly releases.*" in shown and "**" not in shown
        assert "• ship on Tuesdays" in shown and "◦ freeze on Monday" in shown
        assert "```" in shown and "Go     | 3 days" in shown  # the table, aligned in a code block


def test_the_converter_on_the_corpus() -> None:
    safe = neutralize_markdown(CORPUS)
    mrkdwn = to_mrkdwn(safe)
    lines = mrkdwn.splitlines()
    assert lines[0] == "*Release cadence*"
    assert "*weekly releases*" in mrkdwn and "_monthly_" in mrkdwn and "**" not in mrkdwn
    assert "1. Ship on Tuesdays" in lines and "    ◦ freeze on Monday" in lines
    assert "    ◦ roll back with `git revert`" in lines
    table = mrkdwn[mrkdwn.index("```\nOption"):]
    assert table.startswith("```\nOption | Weekly cost | Risk\n-------+-------------+-------\n"
                            "Go     | 3 days      | low\nRust   | 5 days      | unsafe\n```")
    assert "```\ndef ship(week: int) -&gt; bool:" in mrkdwn, "a fence loses its language (mrkdwn would show it)"
    assert "&lt;​!here&gt;" in mrkdwn and "<!" not in mrkdwn
    assert "See the dashboard and tell &lt;\u200b!channel&gt; and @\u200bhere." in mrkdwn
    assert "|" not in mrkdwn.replace(table[:table.index("\n```", 4)], "")

    plain = plain_text(safe)
    for mark in MARKDOWN_PUNCTUATION:
        assert mark not in plain, mark
    assert plain.startswith("Release cadence\n\nWe should adopt weekly releases, not monthly ones.")
    assert "Option · Weekly cost · Risk\nGo · 3 days · low" in plain and "  • freeze on Monday" in plain


def test_links_and_pings_stay_inert_inside_and_outside_code() -> None:
    text = ("[a](https://x.example) ![img](https://x.example/i.png) <https://x.example> <mailto:a@x.example|m>\n"
            "[ref]: https://x.example\n<@U123> <!subteam^S1> `<!channel>` and > quoted\n> real quote")
    safe = neutralize_markdown(text)
    assert rendered_links(safe) == []
    assert safe.startswith("a img <\u200bhttps://x.example>") and "\n[ref]\u200b: https" in safe
    assert "`<\u200b!channel>`" in safe, "code shows as written, with no control sequence left"
    assert "<\u200b@U123>" in safe and "and > quoted" in safe and "\n> real quote" in safe
    assert "&" not in safe, "no entity: a markdown block would show it as written"


def test_tables_and_fences_are_never_cut_and_a_table_too_big_becomes_code() -> None:
    big_table = "| name | value |\n|---|---|\n" + "".join(f"| row {i} | {'x' * 60} |\n" for i in range(80))
    for limit in (2000, 3500):
        # cut where prose would be, each would straddle a chunk's end (both fit in one chunk alone)
        table = "| name | value |\n|---|---|\n" + "".join(f"| cell {i} | {'t' * 40} |\n" for i in range(limit // 80))
        fence = "```python\n" + "".join(f"step_{i} = weigh({i})  # {'c' * 30}\n" for i in range(limit // 62)) + "```"
        text = f"{'Intro. ' * (limit * 45 // 700)}\n\n{table}\n{fence}\n\n{big_table}\nEnd."
        chunks = split_message(text, limit)
        assert all(len(c) <= limit for c in chunks)
        assert sum(table in c for c in chunks) == 1 and sum(fence in c for c in chunks) == 1
        big = [c for c in chunks if "| row " in c]
        assert len(big) >= 2 and all(c.count("```") % 2 == 0 for c in big), "each part a closed code block"
        assert big[0].rstrip().endswith("```") and big[1].startswith("```\n| row ")


async def test_the_peer_refuses_more_than_12000_characters_of_markdown_and_the_verdict_fits() -> None:
    spec = DebateSpec(topic="Weekly releases?", seats=(Seat(label="A", role="proposer", model="openai:gpt-5"),
                                                       Seat(label="B", role="challenger", model="openai:b")),
                      judge="openai:j")
    long = ("A long argument with **bold** and a list:\n- one\n- two\n" * 200)
    verdict = Verdict(winner="A", reasoning=long, recommendation=long, evidence=(long,) * 8,
                      agreements=(long,) * 8, disagreements=(long,) * 8, unresolved=(long,) * 8)
    text, blocks = slack_blocks.verdict_message(spec, verdict)
    assert sum(len(b["text"]) for b in blocks if b["type"] == "markdown") <= MARKDOWN_LIMIT
    async with SlackAPIPeer() as peer:
        client = AsyncWebClient(token="xoxb-test", base_url=peer.base_url)
        await client.chat_postMessage(channel="C1", text=text, blocks=blocks)
        too_much = [{"type": "markdown", "text": "x" * 7000}, {"type": "markdown", "text": "y" * 5001}]
        try:
            await client.chat_postMessage(channel="C1", text="t", blocks=too_much)
        except SlackApiError as exc:
            assert exc.response["error"] == "msg_blocks_too_long"
        else:
            raise AssertionError("12,001 characters of markdown were accepted")
