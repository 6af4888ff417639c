"""`debate usage` in a real subprocess over a real log (SQLite file, Postgres database), after real
debates through the SDKs and the LLM peer (issue 20): every model call the peer answered is in the log
(the debaters' turns, the judge passes), and the numbers add up to the costs the log recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_harness import clean_env, debate, two_providers
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import script_judge
from tests.log_backends import LogBackend

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


def recorded(log_backend: LogBackend) -> tuple[int, float, int, int]:
    """Calls, their summed recorded cost, input and output tokens, read from the log's tables directly."""
    calls = log_backend.sql(
        "select count(*), sum(cost_usd), sum(input_tokens), sum(output_tokens) from (select cost_usd, input_tokens,"
        " output_tokens from turns union all select cost_usd, input_tokens, output_tokens from model_calls) as c")
    count, cost, tokens_in, tokens_out = calls[0]
    return int(count), float(cost or 0.0), int(tokens_in or 0), int(tokens_out or 0)


async def test_usage_adds_up_every_model_call_the_log_recorded(tmp_path: Path, log_backend: LogBackend) -> None:
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        env = two_providers(tmp_path, srv) | log_backend.env
        code, _, err = await debate(tmp_path, "run", "Tabs or spaces?", "--rounds", "1", env=env)
        assert code == 0, err
        answered = len(srv.requests)

    judged = log_backend.sql("select count(*) from model_calls where purpose = 'judge'")[0][0]
    assert judged >= 2, "the debate's two judge passes are in the log"
    calls, cost, tokens_in, tokens_out = recorded(log_backend)
    assert calls == answered, "every model call the peer answered is in the log"
    assert cost > 0

    code, out, err = await debate(tmp_path, "usage", "--json", "--by", "model", env=env)
    assert code == 0, err
    found = json.loads(out)
    total = found["total"]
    assert (total["calls"], total["input_tokens"], total["output_tokens"]) == (calls, tokens_in, tokens_out)
    assert abs(total["cost_usd"] - cost) < 1e-9 and total["unpriced_calls"] == 0
    assert abs(sum(line["cost_usd"] for line in found["lines"]) - cost) < 1e-9
    assert len(found["lines"]) >= 2, "the debaters' two models, at least"

    for by in ("user",):
        code, out, err = await debate(tmp_path, "usage", "--by", by, "--json", env=env)
        assert code == 0, err
        lines = json.loads(out)["lines"]
        assert sum(line["calls"] for line in lines) == calls and abs(sum(ln["cost_usd"] for ln in lines) - cost) < 1e-9

    code, out, err = await debate(tmp_path, "usage", "--since", "1d", env=env)
    assert code == 0, err
    assert "by day" in out and f"{cost:.4f}" in out and "total" in out

    code, out, err = await debate(tmp_path, "usage", "--since", "2026-13-40", env=env)
    assert code == 2 and out == "" and "--since takes a span" in err and len(err.strip().splitlines()) == 1


async def test_every_span_too_long_or_too_big_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Issue 57 item 7: a span past 1970 (`99999999d`), a 400-digit one, a date before 1970 or past year 9999:
    one line on stderr, nothing on stdout, exit 2 — never a traceback."""
    env = clean_env(tmp_path)
    for since in ("99999999d", "9" * 400 + "d", "1" * 13 + "m", "1969-12-31", "0001-01-01", "10000-01-01"):
        code, out, err = await debate(tmp_path, "usage", "--since", since, env=env)
        assert code == 2 and out == "", (since, code, out, err)
        assert len(err.strip().splitlines()) == 1 and "--since" in err and "Traceback" not in err, (since, err)
        assert len(err) < 300, err  # the 400 digits are not echoed back whole
    code, out, err = await debate(tmp_path, "usage", "--since", "20000d", env=env)
    assert code == 0, err  # back to 1971: a long span that fits is fine


async def test_usage_counts_a_call_that_failed_after_streaming(tmp_path: Path, log_backend: LogBackend) -> None:
    """Issue 57 item 2: the challenger streams, then its connection drops; `debate usage` counts its tokens
    (estimated from what it streamed) and says how many calls were counted so."""
    async with FakeLLMServer() as srv:
        script_judge(srv, "A")
        words = " ".join(f"word{n}" for n in range(2000))
        srv.add_rule(Reply(text=words, cut_after_chars=2000), lambda r: "The proposer opened with:" in
                     r.prompt_text)
        env = two_providers(tmp_path, srv) | log_backend.env
        code, _, err = await debate(tmp_path, "run", "Tabs or spaces?", "--rounds", "1", env=env)
        assert code == 0, err
    (failed,) = log_backend.sql("select output_tokens, tokens_estimated from turns where status = 'failed'")
    assert failed[0] >= 500 and failed[1], failed
    code, out, err = await debate(tmp_path, "usage", "--json", env=env)
    assert code == 0, err
    total = json.loads(out)["total"]
    assert total["estimated_calls"] == 1 and total["output_tokens"] >= failed[0], total
    code, out, err = await debate(tmp_path, "usage", env=env)
    assert code == 0 and "1 calls' tokens are estimated" in out, out
