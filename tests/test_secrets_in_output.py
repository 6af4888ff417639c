"""Model output that echoes a secret: no event, no stored row and no rendered text may carry it."""

from __future__ import annotations

import json
from pathlib import Path

import sqlite_utils

from orchestrator.events import TextDelta, TurnCompleted, VerdictReached
from tests.debate_harness import make_spec, run_debate, settings_for
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import is_judge, verdict_json


async def test_a_leaked_key_is_redacted_in_stream_turns_verdict_and_log(tmp_path: Path) -> None:
    async with FakeLLMServer() as srv:
        key = settings_for(srv).openai_api_key
        assert key
        leaky = f"Per the config the token is {key} and also sk-ant-api03-{'x' * 24} so we proceed."
        srv.default = Reply(text=leaky, tokens_per_s=400)
        srv.add_rule(Reply(text=verdict_json("A", recommendation=f"Rotate {key} today.")), match=is_judge)
        result = await run_debate(srv, make_spec("challenge", rounds=1), db=tmp_path / "d.db")

    streamed = "".join(e.delta for e in result.of(TextDelta))
    turns = [e.turn.text for e in result.of(TurnCompleted)]
    (verdict,) = [e.verdict for e in result.of(VerdictReached)]
    assert "[redacted]" in streamed and turns and all("[redacted]" in t for t in turns)
    everything = streamed + json.dumps(turns) + verdict.model_dump_json()
    assert key not in everything and "sk-ant-api03" not in everything
    assert verdict.recommendation == "Rotate [redacted] today."
    dump = json.dumps([list(sqlite_utils.Database(tmp_path / "d.db")[t].rows) for t in ("turns", "verdicts")])
    assert key not in dump and "sk-ant-api03" not in dump
