"""Text safety end to end: secrets never stream out in pieces, ordinary words survive the key shapes,
links and pings from model text stay plain text, control characters leave topics, and a runaway turn
is cut to its effort's size with a visible note before anyone sees or reads it."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
import sqlite_utils
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bots.thread.text import neutralize_discord, neutralize_slack
from orchestrator.events import DebateStarted, Notice, TextDelta, TurnCompleted
from orchestrator.models import DebateSpec, Seat
from orchestrator.safety import REDACTED, Redactor, strip_controls
from tests.debate_harness import make_spec, run_debate
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import is_judge, script_judge, verdict_json

API_KEY_VALUE = "Zq9xW3vB7nM2kL5p"
BEARER_VALUE = "eyJhbGciOiJIUzI1NiJ9.abcdefgh1234"
LEAKY = f"Set api_key = {API_KEY_VALUE} then send Authorization: Bearer {BEARER_VALUE} now."
CUT_NOTE = re.compile(r"\[cut: this turn passed the [\d,]+-character limit\]")


# -- the redactor ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "risk-adjusted-return-model", "a task-management-system-redesign", "the disk-encryption-at-rest-policy",
    "whisk-together-the-eggs-and-flour", "rapid_key: not a key", "Xoxb-is not a token", "mapikey=fine",
])
def test_ordinary_words_survive_the_key_shapes(text: str) -> None:
    assert Redactor()(text) == text


@pytest.mark.parametrize("secret", [
    "sk-proj-AbCdEf0123456789xyz", "sk-ant-api03-AbCdEf0123456789", "xoxb-1234567890-abcdefghij",
    "xapp-1-A0123456789-abcdef", "AIzaSyA0123456789abcdefghijklmnopqrstu", "ghp_0123456789abcdefghijABCD",
    "Bearer eyJhbGciOiJIUzI1NiJ9.payload", "api_key = Zq9xW3vB7nM2", '"api-key": "Zq9xW3vB7nM2"',
])
def test_key_shapes_are_redacted_with_boundaries_around_them(secret: str) -> None:
    redact = Redactor()
    for text in (secret, f"({secret})", f"use {secret}, then", f"'{secret}'\n"):
        shown = redact(text)
        assert REDACTED in shown and secret[-6:] not in shown, text


FRAGMENTS = ("sk-", "sk-ant-", "proj-", "xoxb-", "xapp-", "AIza", "Bearer ", "bEaReR\t", "ghp_", "gho_", "api_key",
             "API-KEY", "apikey", "apı_key", "\u212aey", "=", ": ", "'", '"', ".", "..", "-", "_", " ", "\n", "M", "N",
             "Abc123", "XYZ789_-", "a" * 30, "0123456789" * 3, "x.y", ".abcdef.", "[redacted]")


def shape_by_shape(redactor: Redactor, text: str) -> str:
    """What the redactor returns, were every shape run over the text whether or not it holds the shape's literal."""
    text = strip_controls(text)
    if len(text) < 6:
        return text
    for pattern, _needs in redactor._patterns:
        text = pattern.sub(REDACTED, text)
    return text


@settings(max_examples=400, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=24))
def test_the_redactor_skips_only_the_shapes_a_text_cannot_hold(parts: list[str]) -> None:
    redactor = Redactor(["Zq9xW3vB7nM2kL5p"])
    text = "".join(parts) + "".join(reversed(parts))
    assert redactor(text) == shape_by_shape(redactor, text)


def test_configured_secrets_are_redacted_and_short_ones_ignored() -> None:
    redact = Redactor(["tok-PRIVATE-0123", "abc"])
    assert redact("x tok-PRIVATE-0123 y abc") == f"x {REDACTED} y abc"


def test_a_secret_split_at_every_point_never_leaves_the_stream() -> None:
    secret = "tok-PRIVATE with space 0123"
    redact = Redactor([secret])
    text = f"{LEAKY} Then {secret} and sk-proj-AbCdEf0123456789xyz done. risk-adjusted-return-model stays."
    whole = redact(text)
    for cuts in itertools.chain(itertools.combinations(range(1, len(text)), 1),
                                itertools.combinations(range(1, len(text), 7), 2)):
        stream = redact.stream()
        bounds = (0, *cuts, len(text))
        released = [stream.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
        released.append(stream.finish())
        for piece in released:
            for value in (API_KEY_VALUE, BEARER_VALUE[:12], "PRIVATE", "AbCdEf0123"):
                assert value not in piece, (cuts, piece)
        assert "".join(released) == whole, cuts


def test_a_long_word_is_released_in_pieces_once_it_cannot_be_one_secret() -> None:
    stream = Redactor().stream()
    shown = "".join(stream.feed("x" * 500) for _ in range(20))
    assert 0 < len(shown) < 10_000
    assert shown + stream.finish() == "x" * 10_000


# -- control characters ----------------------------------------------------------------------------------


def test_bidi_controls_and_nul_leave_topics() -> None:
    hostile = "Adopt\u202e gnp.exe\u202c Rust\x00 for \u2066ingest\u2069?\u200f\u200e\x1b[31m"
    spec = DebateSpec(topic=hostile, seats=(Seat(label="A", role="proposer", model="openai:a"),
                                            Seat(label="B", role="challenger", model="openai:b")), judge="openai:j")
    assert spec.topic == "Adopt gnp.exe Rust for ingest?[31m"
    assert strip_controls("line one\nline two\tok") == "line one\nline two\tok"
    with pytest.raises(ValueError):
        DebateSpec(topic="\u202e\x00 \u2066", seats=spec.seats, judge="openai:j")


# -- links and pings in model text -----------------------------------------------------------------------


def test_discord_masked_links_show_as_plain_text() -> None:
    shown = neutralize_discord("See [the docs](https://evil.example/phish) and [x](<https://evil.example>).")
    assert "](" not in shown and "evil.example" in shown


def test_what_reaches_a_platform_carries_no_controls_even_from_old_log_rows() -> None:
    old_topic = "Adopt\u202e gnp.exe\x00 Rust"  # stored before topics were cleaned, or a display name
    for neutralize in (neutralize_slack, neutralize_discord):
        assert neutralize(old_topic) == "Adopt gnp.exe Rust"


def test_slack_link_syntax_and_mentions_show_as_plain_text() -> None:
    shown = neutralize_slack("Click <https://evil.example|the docs> <!channel> <@U123> <#C1> [a](https://b.c)")
    assert "<" not in shown and ">" not in shown and "](" not in shown


# -- the engine: one scrub where events are emitted ------------------------------------------------------


async def test_a_secret_split_across_streamed_batches_never_reaches_a_sink(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        # ~12 words a second: every word arrives after the batcher's interval, so each is its own batch.
        srv.add_rule(Reply(text=LEAKY, tokens_per_s=12), match="model-a")
        srv.default = Reply(text="I disagree with the plan on cost grounds.")
        script_judge(srv)
        result = await run_debate(srv, make_spec("challenge", rounds=1), db=tmp_path / "d.db")

    deltas = [e.delta for e in result.of(TextDelta) if e.seat == "A"]
    assert len(deltas) > 3, "the turn streamed in several batches"
    for delta in deltas:
        assert API_KEY_VALUE not in delta and "eyJhbGci" not in delta, delta
    (turn, *_) = [e.turn for e in result.of(TurnCompleted)]
    assert "".join(deltas) == turn.text
    assert API_KEY_VALUE not in turn.text and turn.text.count(REDACTED) == 2


async def test_every_event_and_every_log_row_is_scrubbed_once_at_emit(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        key = "sk-test-secret-0123456789"  # the harness's configured OpenAI key
        srv.default = Reply(text=f"Use ghp_0123456789abcdefghijABCD and {key}.\u202e\x00")
        srv.add_rule(Reply(text=verdict_json("A", reasoning=f"A quoted {key}.", agreements=[f"rotate {key}"])),
                     match=is_judge)
        spec = make_spec("challenge", rounds=1, topic=f"Should we rotate {key} weekly?")
        result = await run_debate(srv, spec, db=tmp_path / "d.db")

    everything = json.dumps([e.model_dump(mode="json") for e in result.events])
    assert key not in everything and "ghp_0123" not in everything
    assert "\u202e" not in everything and "\\u0000" not in everything
    (started,) = result.of(DebateStarted)
    assert started.spec.topic == f"Should we rotate {REDACTED} weekly?"
    db = sqlite_utils.Database(tmp_path / "d.db")
    rows = json.dumps([list(db[t].rows) for t in ("debates", "turns", "verdicts", "notices")])
    assert key not in rows and "ghp_0123" not in rows and REDACTED in rows


# -- a runaway turn --------------------------------------------------------------------------------------


async def test_a_turn_past_its_size_limit_is_cut_with_a_note_everywhere(tmp_path: Path) -> None:
    huge = " ".join(f"word{i:06d}" for i in range(25_000)) + " TAIL-MARKER"  # 275,011 characters
    async with FakeLLMServer() as srv:
        srv.add_rule(Reply(text=huge), match="model-a")  # a provider that ignores max_tokens
        srv.default = Reply(text="A short challenge.")
        script_judge(srv)
        result = await run_debate(srv, make_spec("challenge", rounds=1), db=tmp_path / "d.db")
        challenger = [r for r in srv.requests if r.model == "model-b"]
        judge = [r for r in srv.requests if is_judge(r)]

    (turn, *_) = [e.turn for e in result.of(TurnCompleted)]
    assert turn.status == "ok" and CUT_NOTE.search(turn.text)
    assert 10_000 < len(turn.text) < 100_000 and "TAIL-MARKER" not in turn.text
    streamed = "".join(e.delta for e in result.of(TextDelta) if e.seat == "A")
    assert streamed == turn.text
    for request in (*challenger, *judge):
        assert "TAIL-MARKER" not in request.prompt_text and CUT_NOTE.search(request.prompt_text)
        assert len(request.prompt_text) < 110_000
    stored = list(sqlite_utils.Database(tmp_path / "d.db")["turns"].rows_where("seat = 'A'"))
    assert stored[0]["text"] == turn.text
    assert not [n for n in result.of(Notice) if "TAIL-MARKER" in n.text]
