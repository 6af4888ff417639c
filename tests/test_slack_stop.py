"""After a stop, a thread gets the notice that says it stopped and nothing else new (issue 57, item 21).

Through the Slack peer and a real `debate serve`-shaped bot: a channel paced at one post every few seconds
holds a debate's turns back while the model answers at once, so when the first turn shows in the thread
the rest is written (in the log) and waiting to be posted. `/debate stop` then leaves the thread with no
new message (on Slack the root's status says it was cancelled), while the log, `show` and the page keep
every turn written."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bots.slack.surface import slack_limits
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import is_judge

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

# a post every few seconds: what is written faster than that waits for the channel's turn
LIMITS = slack_limits(post_interval=3.0, updates=1000, window=1.0, edit_interval=0.05)
_keys = iter(range(1_000_000))


@pytest.fixture
async def peer() -> AsyncIterator[SlackAPIPeer]:
    async with SlackAPIPeer() as p:
        yield p


@pytest.fixture
async def bot(tmp_path: Path, peer: SlackAPIPeer, llm_server: FakeLLMServer) -> AsyncIterator[SlackBot]:
    settings = slack_settings(str(tmp_path / "d.db"), peer, llm_server.openai_base_url, llm_server.anthropic_base_url,
                              DEBATE_CHAT_MODELS="openai:*,anthropic:*")
    async with SlackBot(settings, LIMITS) as b:
        yield b


async def ask(bot: SlackBot, peer: SlackAPIPeer, text: str, **kwargs: Any) -> str:
    key = f"k{next(_keys)}"
    status, _ = await bot.command(text, peer, response_url=peer.response_url(key), **kwargs)
    assert status == 200
    return key


async def answer(peer: SlackAPIPeer, key: str) -> str:
    def texts(p: SlackAPIPeer) -> list[str]:
        return [c.params.get("text", "") for c in p.of("response_url") if c.params["key"] == key]

    await peer.wait_for(texts)
    (text,) = texts(peer)
    return text


async def test_a_stopped_thread_posts_nothing_new_and_the_log_keeps_what_was_not_shown(
    bot: SlackBot, peer: SlackAPIPeer, llm_server: FakeLLMServer
) -> None:
    judge = asyncio.Event()  # the debate waits at its judge: every turn is written by then
    llm_server.add_rule(Reply(text="unused", gate=judge), match=is_judge)
    llm_server.add_rule(Reply(text="Proposer: the benchmark shows 2x."), match="gpt-5")
    llm_server.add_rule(Reply(text="Challenger: staffing is the risk."), match="claude-sonnet-4-6")
    await ask(bot, peer, "Should ingest move to Go? --rounds 2", user="U2")
    await llm_server.wait_for_requests(5)  # four turns, then the judge's first pass: held
    (debate,) = await bot.core.store.history(10)
    record = await bot.core.store.get_debate(debate.id)
    assert record is not None and record.channel and record.thread
    assert len(record.turns) == 4
    root = record.thread

    def shown_turns(p: SlackAPIPeer) -> list[Any]:
        return [m for m in p.thread(record.channel, root) if "benchmark" in m.text or "staffing" in m.text]

    await peer.wait_for(shown_turns)  # the first turn shows; the others wait for the channel's turn
    posts_before = len(peer.of("chat.postMessage"))
    thread_before = {m.ts for m in peer.thread(record.channel, root)}
    assert len(shown_turns(peer)) < 4, "every turn was posted before the stop: nothing was held back"

    stopped = await answer(peer, await ask(bot, peer, f"stop {debate.id}", user="U2"))
    assert stopped == f"Stopping debate `{debate.id}`; its thread will say it was cancelled."
    judge.set()
    await bot.settle()

    new = peer.of("chat.postMessage")[posts_before:]
    assert new == [], [c.params.get("text", "")[:80] for c in new]  # Slack says it on the root, posts nothing
    assert {m.ts for m in peer.thread(record.channel, root)} == thread_before
    updated = {c.params["ts"] for c in peer.of("chat.update")}
    assert updated <= thread_before | {root}  # edits only finish what was posted (and the root's status)
    assert "cancel" in peer.message(record.channel, root).text.lower()

    ended = await bot.core.store.get_debate(debate.id)
    assert ended is not None and ended.status == "cancelled"
    assert [t.text for t in ended.turns] == [t.text for t in record.turns]  # `show` and the page have them all
