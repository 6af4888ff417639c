"""A rejected setting is named in one line, but a secret or a URL's password never appears in it."""

from __future__ import annotations

import pytest

from bots.settings import load_settings
from orchestrator.config import ConfigError


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
