"""Hostile text through the command grammar and every renderer: never a crash (only CommandError for bad
input), never a ping or a disguised link, never a platform limit broken.

Two layers: a fixed corpus of hostile strings that always runs (each alone, repeated past every limit,
and in pairs), then hypothesis with a bounded, derandomized number of examples so CI is deterministic.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bots.commands import CommandError, StartDebate, parse_command, start_request
from bots.discord import render as discord_render
from bots.slack import blocks as slack_blocks
from bots.slack.markdown import MARKDOWN_LIMIT, neutralize_markdown
from bots.thread.text import neutralize_discord, neutralize_slack, outside_code, split_message
from orchestrator.events import Notice, TurnStarted
from orchestrator.log import Tally
from orchestrator.models import MAX_MODEL_CHARS, DebateSpec, Outcome, Seat, StanceScore, Verdict
from orchestrator.safety import Redactor
from tests.fuzz_harness import CONTROLS, OUR_LINK, check_discord, check_discord_text

HOSTILE = (
    "@everyone", "@here", "@channel", "@EveryOne", "x@here", "@\u200beveryone", "<!channel>", "<!here>",
    "<!everyone>", "<@U012ABCDEF>", "<@W1>", "<#C0123|general>", "<!subteam^S123|eng>", "<!date^1|x>",
    "<@123456789012345678>", "<@!123456789012345678>", "<@&123456789012345678>", "<#123456789012345678>",
    "[click](https://evil.example/p)", "[x](<https://evil.example>)", "<https://evil.example|the docs>",
    "<mailto:a@b.example|mail>", "&lt;!channel&gt;", "&amp;", "&", "<", ">", "[", "](", ")", "|",
    "\u202e", "\u202a", "\u2066", "\u2069", "\u200f", "\u200e", "\x00", "\x1b[2J", "\r", "\t", "\n", "\n\n",
    "```", "```python\n", "`", "*", "_", "~", "> ", "--format", "--rounds=9", "—vs", "–effort", "--judge",
    "stances", "history", "search", "show", "stop 3f2a", "quote", "help", "9" * 40, "🙂", "\U0001f600",
    "\ufeff", "\u0301", "ﷺ", "sk-proj-AbCdEf0123456789xyz", " ", "a" * 200,
)
CORPUS = (
    *HOSTILE,
    *(token * (6000 // len(token) + 1) for token in HOSTILE),  # every token past every limit
    *("".join(pair) for pair in itertools.product(HOSTILE[:30], repeat=2)),
    " ".join(HOSTILE),
    "\n".join(HOSTILE) * 40,
)

SLACK_PING = re.compile(r"<[!@#]|@(?:channel|here|everyone)\b", re.IGNORECASE)

# Slack: message text 4,000; section text 3,000; field 2,000; context element 2,000 (we keep to 1,900);
# header 150; button 75; 50 blocks. Discord: content 2,000; title 256; description 4,096; field name 256,
# value 1,024; 25 fields; footer 2,048; author 256; 6,000 across a message's embeds.


def check_slack_text(text: str) -> None:
    assert len(text) <= 4000
    assert not SLACK_PING.search(text.replace(f"<{OUR_LINK}|", "")), text[:200]
    assert "](" not in text
    assert not CONTROLS.search(text)


def check_slack_markdown(text: str) -> None:
    """A markdown block's text: no ping anywhere, no link outside code (inside it one renders as text)."""
    assert not SLACK_PING.search(text), text[:200]
    prose = outside_code(text, lambda part: part, lambda _code: " ")
    assert "](" not in prose and not re.search(r"<(?:https?|mailto):", prose)
    assert not CONTROLS.search(text)


def check_slack(text: str, blocks: list[dict[str, Any]]) -> None:
    check_slack_text(text)
    assert len(blocks) <= 50
    assert sum(len(b["text"]) for b in blocks if b["type"] == "markdown") <= MARKDOWN_LIMIT
    for block in blocks:
        kind = block["type"]
        if kind == "markdown":
            check_slack_markdown(block["text"])
        elif kind == "section":
            assert len(block["text"]["text"]) <= 3000
            check_slack_text(block["text"]["text"])
            for field in block.get("fields", []):
                assert len(field["text"]) <= 2000
                check_slack_text(field["text"])
        elif kind == "context":
            for element in block["elements"]:
                assert len(element["text"]) <= 2000
                check_slack_text(element["text"])
        elif kind == "header":
            assert len(block["text"]["text"]) <= 150
        elif kind == "actions":
            for element in block["elements"]:
                assert len(element["text"]["text"]) <= 75
                assert len(element["value"]) <= 2000


# -- what each text goes through -------------------------------------------------------------------------


def spec_for(text: str, model_text: str = "") -> DebateSpec | None:
    """A spec carrying `text` wherever a user's words can land, or None when the topic is refused."""
    model = "openai:" + (model_text or "gpt-5")[:MAX_MODEL_CHARS - len("openai:")]  # longer is refused: test_chat_words
    seats = (Seat(label="A", role="proposer", model=model), Seat(label="B", role="challenger", model="openai:b"))
    try:
        return DebateSpec(topic=text[:4000], seats=seats, judge=model, requested_by=text[:100])
    except ValueError:
        return None


def verdict_for(text: str) -> Verdict:
    items = tuple(text[i::3] or text for i in range(3)) * 4
    return Verdict(winner=text[:300] or "A", split=True, reasoning=text, recommendation=text * 2,
                   agreements=items, disagreements=items, unresolved=items, consensus="partial",
                   ratings={f"{text[:300]}{i}": "high" for i in range(12)},
                   scores=tuple(StanceScore(seat=text[:10] or "A", stance=text, score=7) for _ in range(6)))


def outcome_for(text: str) -> Outcome:
    return Outcome(status="failed", rounds_completed=1, rounds_planned=2, input_tokens=10**9, output_tokens=10**9,
                   cost_usd=12345.678, warnings=(text,) * 5, error=text)


def exercise(text: str) -> None:
    """One hostile text through the grammar and every renderer, with every check."""
    commands: list[object] = []
    for attempt in (lambda: parse_command(text), lambda: parse_command(f"{text} --vs {text} --judge {text}"),
                    lambda: start_request(text, format=text[:20], rounds=text[:20], debaters=text, judge=text,
                                          effort=text[:20])):
        try:
            commands.append(attempt())
        except CommandError as exc:  # shown to the user as each platform shows errors
            check_slack_text(slack_blocks.safe(str(exc)))
            check_discord_text(discord_render.safe(str(exc), 1900), 2000)
    for command in commands:
        if isinstance(command, StartDebate):
            spec_for(command.topic)  # the spec boundary refuses or cleans it; it never crashes

    spec = spec_for(text, text) or spec_for("A fair topic", text)
    assert spec is not None
    verdict, outcome = verdict_for(text), outcome_for(text)
    tally = Tally(debate_id=spec.id, counts={"agree": 10**6, "disagree": 10**6, **{f"side:{s}": 10**6 for s in "ABCD"}},
                  total=6 * 10**6)
    started = TurnStarted(debate_id=spec.id, round=1, seat=text[:20] or "A", role="proposer", kind=text[:40] or "x",
                          model=text[:120] or "m")

    check_slack(*slack_blocks.root_message(spec, "running", text))
    check_slack(*slack_blocks.final_root(spec, outcome, verdict))
    check_slack(*slack_blocks.verdict_message(spec, verdict, tally, (10**9, 10**9)))
    check_slack(*slack_blocks.notice_line(Notice(debate_id=spec.id, level="warning", text=text)))
    check_slack_text(slack_blocks.turn_header(started))
    check_slack_text(slack_blocks.quote_text(spec, verdict, OUR_LINK))
    check_slack_text(slack_blocks.quote_text(spec, verdict, None))

    check_discord(discord_render.root_embed(spec, status=text, notes=[text, text]))
    verdict_embed = discord_render.verdict_embed(spec, verdict, outcome, Tally(debate_id=spec.id))
    check_discord(verdict_embed)
    check_discord(discord_render.with_tally(verdict_embed, tally, ("A", "B", "C", "D")))
    check_discord(discord_render.ended_embed(outcome))
    check_discord(discord_render.quote_embed(text, text, text, OUR_LINK, text))
    check_discord_text(discord_render.thread_name(text), 100)

    for neutralize, limit, check in ((neutralize_slack, 3500, check_slack_text),
                                     (neutralize_markdown, 3500, check_slack_markdown),
                                     (neutralize_discord, 2000, lambda t: check_discord_text(t, 2000)),
                                     (neutralize_discord, 4000, lambda t: check_discord_text(t, 4000))):
        chunks = split_message(f"*A · proposer*\n{neutralize(text)}", limit)
        assert chunks
        for chunk in chunks:
            assert len(chunk) <= limit
            check(chunk)


@pytest.mark.parametrize("start", range(0, len(CORPUS), 150))
def test_the_hostile_corpus(start: int) -> None:
    for text in CORPUS[start:start + 150]:
        exercise(text)


fragments = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12),
                      st.characters(codec="utf-8").map(lambda c: c * 3))
hostile_text = st.one_of(
    st.lists(fragments, max_size=30).map("".join),
    st.tuples(st.lists(fragments, min_size=1, max_size=4).map("".join), st.integers(1, 3000))
    .map(lambda t: (t[0] * t[1])[:9000]),
)


@settings(max_examples=800, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_text)
def test_generated_hostile_text(text: str) -> None:
    exercise(text)


# -- streamed redaction ----------------------------------------------------------------------------------

SECRET = "tok-PRIVATE with space 0123"
SECRETISH = ("sk-", "ant-", "proj-", "AbCdEf0123456789xyz", "Bearer", "bearer ", "api_key", "API-KEY", "=", ": ",
             '"', "'", "Zq9xW3vB7nM2kL5p", "xoxb-", "1234567890-abc", "ghp_", "AIza", " ", "\n", "-", "ri", "tok-",
             "PRIVATE", "with space", " 0123", SECRET, "\u202e", "\x00")


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(st.lists(st.one_of(st.sampled_from(SECRETISH), st.text(max_size=6)), max_size=40))
def test_streamed_redaction_matches_redacting_the_whole_text(deltas: list[str]) -> None:
    """However a turn is split into deltas, what streams out is what redacting the whole turn gives,
    and no delta carries a secret that the whole text would have hidden."""
    redact = Redactor([SECRET])
    stream = redact.stream()
    shown = [stream.feed(delta) for delta in deltas] + [stream.finish()]
    whole = redact("".join(deltas))
    assert "".join(shown) == whole
    assert SECRET not in "".join(shown)
