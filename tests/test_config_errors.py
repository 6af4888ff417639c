"""A rejected setting is named in one line, but a secret or a URL's password never appears in it."""

from __future__ import annotations

import pytest

from orchestrator.config import ConfigError, load_settings


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
