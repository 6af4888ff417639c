"""A debater that loops (issue 57 item 13): the scripted LLM peer streams two sentences over and over, as
llama.cpp's small model did until the 240 s call limit. Through the real bolt app and the Slack peer, the
call is stopped early (the peer streamed a small part of the loop before the client went away), the turn
keeps what came before the loop and says so in the thread, and the debate goes on to its verdict. The
detection itself, on words, is checked on the texts that must and must not count as loops."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bots.slack.surface import slack_limits
from orchestrator.debate.repeats import loop_start, repeat_note, without_loop
from orchestrator.providers.base import Completion
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.slack_api import SlackAPIPeer, SlackBot, slack_settings
from tests.llm_scripts import is_judge, script_judge
from tests.slack_markdown_harness import turn_messages

INTRO = "Postgres is the better store for the debate log.\n\nIt has what we need already:\n\n"
LOOP = ("The pool caps connections at one hundred per node, so the writers never starve. "
        "Replication is built in and has carried our billing data for years without a lost write.\n")
LOOPED = INTRO + LOOP * 5000  # about 120,000 words: at 400 a second, far past the 240 s call limit
NOTE_START = "\n\n[cut: this turn began repeating itself"


@pytest.mark.slow
async def test_a_looping_turn_is_stopped_early_keeps_what_came_before_and_says_so(tmp_path: Path) -> None:
    async with SlackAPIPeer() as peer, FakeLLMServer() as llm:
        script_judge(llm, "A")
        llm.add_rule(Reply(text=LOOPED, tokens_per_s=400), match="claude-sonnet-4-6")
        llm.add_rule(Reply(text="Monthly is safer: the log is small."), match="gpt-5")
        settings = slack_settings(str(tmp_path / "d.db"), peer, llm.openai_base_url, llm.anthropic_base_url)
        async with SlackBot(settings, slack_limits(streams=False)) as bot:
            await bot.command("Postgres or SQLite for the log? --rounds 1", peer, channel="C7")
            await bot.settle()
            (summary,) = await bot.core.store.history(1)
            record = await bot.core.store.get_debate(summary.id)
            parts = await turn_messages(bot, peer, summary.id, "C7")
            (looping,) = [r for r in llm.requests if r.model == "claude-sonnet-4-6" and not is_judge(r)]
            await asyncio.wait_for(looping.done.wait(), 60)  # a bound for a broken test, not a latency figure

    assert record is not None and record.status == "completed" and record.verdict is not None
    opening = next(t for t in record.turns if t.seat == "A")
    kept, _, note = opening.text.partition(NOTE_START)
    assert opening.status == "ok" and kept == (INTRO + LOOP).rstrip()
    assert note and "repeated characters were dropped" in note
    # the call was stopped, early: the peer streamed a few copies of the loop, not its whole reply
    assert looping.cancelled
    assert len(kept) < looping.streamed_chars < 40 * len(LOOP) < len(LOOPED) // 100
    # the thread shows what came before the loop, once, and the note
    shown = "\n".join(p.markdown for p in parts)
    assert shown.count("The pool caps connections") == 1 and "began repeating itself" in shown
    assert "Monthly is safer" in "\n".join(m.markdown for m in peer.messages.values())


def test_what_counts_as_a_loop() -> None:
    loop = INTRO + LOOP * 14
    assert loop_start(loop) == len(INTRO + LOOP.rstrip())
    one_line = INTRO + (LOOP.strip() + " ") * 14 + "The pool caps"  # no line breaks, cut mid-copy
    assert one_line[:loop_start(one_line)] == INTRO + LOOP.strip()
    assert loop_start(INTRO + "stop " * 400) == len(INTRO + "stop stop stop")
    # not loops: a copy or two, an emphatic refrain, a list of alike items, ordinary prose
    assert loop_start(INTRO + LOOP * 3) is None
    assert loop_start("No, no, no, no, no. " * 3) is None
    assert loop_start("\n".join(f"- Node {n}: the pool caps connections at {n * 10}." for n in range(60))) is None
    prose = " ".join(f"Point {n} stands on measurement {n * 7} from the staging run." for n in range(200))
    assert loop_start(prose) is None
    done = without_loop(Completion(text=INTRO + LOOP * 20))
    assert done.text == (INTRO + LOOP).rstrip() + repeat_note(len(LOOP * 19) + 1)
