"""A DEBATE_DB no log can live at is one line naming DEBATE_DB and exit status 2, for every command that
opens the log: a real `debate` subprocess each time."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_harness import clean_env, debate, two_providers
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

COMMANDS = (
    ("run", "Should we rewrite ingest in Go?"),
    ("history",),
    ("show", "abc1234"),
    ("search", "tabs"),
    ("export", "abc1234", "--format", "md"),
    ("serve", "--port", "0"),
    ("worker", "--port", "0"),
)


def assert_names_debate_db(code: int, out: str, err: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "DEBATE_DB" in lines[0] and "Traceback" not in err, err
    assert "No debates yet" not in out and "No matches" not in out


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
async def test_a_missing_folder_is_named_for_every_command(tmp_path: Path, command: tuple[str, ...]) -> None:
    async with FakeLLMServer() as srv:
        env = two_providers(tmp_path, srv) | {"DEBATE_DB": "/nonexistent/dir/x.db",
                                               "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "s" * 32}
        assert_names_debate_db(*await debate(tmp_path, *command, env=env, limit_s=60))
        assert not srv.requests, "nothing runs when the log cannot be opened"


async def test_a_folder_given_as_the_file_is_named(tmp_path: Path) -> None:
    env = clean_env(tmp_path, DEBATE_DB=str(tmp_path))
    assert_names_debate_db(*await debate(tmp_path, "history", env=env))


async def test_a_postgres_log_ignores_debate_db(tmp_path: Path) -> None:
    """With DEBATE_DATABASE_URL set, DEBATE_DB is not where the log lives, so it is not checked; a log
    that cannot be reached is still one line, without a traceback."""
    env = clean_env(tmp_path, DEBATE_DB="/nonexistent/dir/x.db", DEBATE_DATABASE_URL="postgresql://u@127.0.0.1:1/db")
    code, _, err = await debate(tmp_path, "history", env=env)
    assert "DEBATE_DB:" not in err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "cannot open the debate log" in err, err
