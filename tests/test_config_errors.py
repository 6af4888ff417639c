"""A rejected setting is named in one line, but a secret or a URL's password never appears in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bots.settings import load_settings
from orchestrator.budgets import BudgetExceeded, check_budget
from orchestrator.config import ConfigError
from orchestrator.quotas import Budget, Claim
from tests.cli_harness import clean_env, debate


def test_a_bad_database_url_is_named_without_its_password() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(_env_file=None, DEBATE_DATABASE_URL="mysql://bot:hunter2-secret@db.example/debates")
    message = str(info.value)
    assert message.startswith("DEBATE_DATABASE_URL:") and "mysql://bot:***@db.example" in message
    assert "hunter2" not in message


def test_a_bad_secret_is_named_but_not_shown() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(_env_file=None, DEBATE_WORKFLOW_DB_URL="ftp://x:pw@h/db")
    assert "pw@" not in str(info.value)


def test_database_passwords_are_scrubbed_like_other_secrets() -> None:
    settings = load_settings(_env_file=None, DEBATE_DATABASE_URL="postgresql://bot:s3cret-pass@db/debates")
    assert "s3cret-pass" in settings.secrets()


def test_a_rule_across_variables_never_echoes_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cross-field rule's input is every setting: the error must name the rule and show none of them."""
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "discord-secret-token-123")
    monkeypatch.setenv("DISCORD_SHARD_IDS", "0,1")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT" in str(caught.value)
    assert "discord-secret-token-123" not in str(caught.value)
    monkeypatch.setenv("DISCORD_SHARD_COUNT", "2")
    monkeypatch.setenv("DISCORD_SHARD_IDS", "2")
    with pytest.raises(ConfigError, match="below DISCORD_SHARD_COUNT"):
        load_settings()


def test_a_shard_owns_the_guilds_discord_routes_to_it() -> None:
    guild = 740000000000000001  # (id >> 22) % 2 decides the shard
    shard = (guild >> 22) % 2
    assert load_settings(DISCORD_SHARD_COUNT=2, DISCORD_SHARD_IDS=str(shard)).owns_guild(guild)
    assert not load_settings(DISCORD_SHARD_COUNT=2, DISCORD_SHARD_IDS=str(1 - shard)).owns_guild(guild)
    assert load_settings().owns_guild(guild)  # unsharded: every guild


REFUSED_SETTINGS = [
    ("DEBATE_PUBLIC_URL", "javascript:alert(1)"),
    ("DEBATE_PUBLIC_URL", "not a url"),
    ("DEBATE_PUBLIC_URL", "//debate.example.com"),
    ("DEBATE_PUBLIC_URL", "ftp://debate.example.com"),
    ("DEBATE_WEB_SECRET", "q7"),
    ("DEBATE_WEB_SECRET", "a" * 31),
    ("DEBATE_BUDGET_USD_PER_MONTH", "inf"),
    ("DEBATE_BUDGET_USD_PER_MONTH", "1e309"),
    ("DEBATE_BUDGET_USD_PER_USER_DAY", "nan"),
    ("DEBATE_BUDGET_USD_PER_WORKSPACE_DAY", "-1"),
]


@pytest.mark.parametrize(("variable", "value"), REFUSED_SETTINGS)
def test_a_setting_that_cannot_be_meant_is_refused_in_one_line_naming_it(variable: str, value: str) -> None:
    """Issue 57 item 8: a page address that is not absolute http(s), a page secret under 32 bytes, a budget
    that is not a finite number of 0 or more."""
    with pytest.raises(ConfigError) as info:
        load_settings(_env_file=None, **{variable: value})
    message = str(info.value)
    assert message.startswith(f"{variable}:") and "\n" not in message, message
    if variable == "DEBATE_WEB_SECRET":
        assert value not in message and "32 bytes" in message


def test_the_settings_that_are_meant_are_kept() -> None:
    settings = load_settings(_env_file=None, DEBATE_PUBLIC_URL="https://debates.example.com/team/",
                             DEBATE_WEB_SECRET="s" * 32, DEBATE_BUDGET_USD_PER_MONTH="0",
                             DEBATE_BUDGET_USD_PER_USER_DAY="2.5")
    assert settings.debate_public_url == "https://debates.example.com/team/"
    assert (settings.debate_budget_usd_per_month, settings.debate_budget_usd_per_user_day) == (0.0, 2.5)
    budget = Budget.from_settings(settings)
    assert budget is not None and budget.per_month == 0.0
    with pytest.raises(BudgetExceeded, match="DEBATE_BUDGET_USD_PER_MONTH"):  # 0: every paid start is refused
        check_budget(budget, Claim(platform="slack", workspace="T1", user="U1", channel="C1"), 0.01, [], 0.0)
    assert load_settings(_env_file=None, DEBATE_PUBLIC_URL="http://127.0.0.1:3000").debate_public_url


@pytest.mark.slow
async def test_the_command_line_refuses_a_bad_setting_with_one_line_and_exit_2(tmp_path: Path) -> None:
    for variable, value in (("DEBATE_PUBLIC_URL", "javascript:alert(1)"), ("DEBATE_WEB_SECRET", "q7"),
                            ("DEBATE_BUDGET_USD_PER_MONTH", "1e309")):
        code, out, err = await debate(tmp_path, "history", env=clean_env(tmp_path, **{variable: value}))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (variable, code, err)
        assert err.startswith(f"debate: {variable}:"), err
