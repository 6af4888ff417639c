"""`debate run` keeps logger lines out of the user's terminal: what the user should know is in the
rendered output, in words; `--verbose` shows the log on stderr. A real subprocess, the real SDKs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_harness import clean_env, debate, two_providers
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.llm_scripts import is_judge, script_judge, verdict_json

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

JUDGE_WARNING = "PARSE_ERROR:judge:no_recommendation"


async def run_with_an_answer_sent_back(tmp_path: Path, *flags: str) -> tuple[int, str, str]:
    """A judge whose first answer has an empty recommendation: it is sent back once, and the log warns."""
    async with FakeLLMServer() as srv:
        srv.add_rule(Reply(text=verdict_json("A", recommendation="")), match=is_judge, times=1)
        script_judge(srv, "A")
        return await debate(tmp_path, "run", "Should we rewrite ingest in Go?", "--rounds", "1", *flags,
                            env=two_providers(tmp_path, srv))


async def test_a_normal_run_prints_no_logger_lines(tmp_path: Path) -> None:
    code, out, err = await run_with_an_answer_sent_back(tmp_path)
    assert code == 0, err
    assert "Verdict: A" in out
    for stream in (out, err):
        assert "WARNING" not in stream and JUDGE_WARNING not in stream, stream
        assert "orchestrator." not in stream


async def test_verbose_shows_the_log_on_stderr(tmp_path: Path) -> None:
    code, out, err = await run_with_an_answer_sent_back(tmp_path, "--verbose")
    assert code == 0, err
    assert "WARNING orchestrator.debate.judge: " in err and JUDGE_WARNING in err
    assert JUDGE_WARNING not in out


async def test_an_error_is_still_one_line(tmp_path: Path) -> None:
    code, _, err = await debate(tmp_path, "show", "nope123", env=clean_env(tmp_path))
    assert code == 2
    assert err.strip().splitlines() == ["debate: no debate with id 'nope123'; `debate history` lists them"]
