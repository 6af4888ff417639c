"""Settings from the environment and `.env`, validated once in main() and passed down."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from orchestrator.models import EFFORTS, FORMATS, MAX_JUDGES, MAX_MODEL_CHARS, MAX_ROUNDS, MIN_JUDGES, MIN_ROUNDS
from orchestrator.safety import use_configured_secrets


class ConfigError(Exception):
    """A setting is missing or malformed; the message is one line a user can act on."""


class Settings(BaseSettings):
    """The core's settings: storage, seats, limits, providers. A platform's live in bots/settings.py."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True, populate_by_name=True
    )

    # storage
    debate_db: Path = Field(default=Path("./debates.db"), alias="DEBATE_DB")
    # set: the log (and the workflow engine's state) live in this Postgres database instead
    debate_database_url: str | None = Field(default=None, alias="DEBATE_DATABASE_URL")
    # the workflow engine's database, when not the default (orchestrator/durable/config.py: system_db_url)
    debate_workflow_db_url: str | None = Field(default=None, alias="DEBATE_WORKFLOW_DB_URL")

    # seats and defaults
    debate_proposer: str | None = Field(default=None, alias="DEBATE_PROPOSER")
    debate_challenger: str | None = Field(default=None, alias="DEBATE_CHALLENGER")
    debate_judge: str | None = Field(default=None, alias="DEBATE_JUDGE")
    debate_tiebreak_judge: str | None = Field(default=None, alias="DEBATE_TIEBREAK_JUDGE")
    debate_judges_text: str = Field(default="", alias="DEBATE_JUDGES")  # a default jury: `debate_judges`
    debate_format: str = Field(default="challenge", alias="DEBATE_FORMAT")
    debate_rounds: int = Field(default=2, alias="DEBATE_ROUNDS")
    debate_effort: str = Field(default="medium", alias="DEBATE_EFFORT")
    debate_call_timeout: float = Field(default=240.0, gt=0, alias="DEBATE_CALL_TIMEOUT")
    debate_max_concurrent: int = Field(default=50, ge=1, alias="DEBATE_MAX_CONCURRENT")
    debate_max_retries: int = Field(default=2, ge=0, le=10, alias="DEBATE_MAX_RETRIES")
    debate_log_format: Literal["text", "json"] = Field(default="text", alias="DEBATE_LOG_FORMAT")
    # uvloop's loop where installed (bots/event_loop.py), or asyncio's own
    debate_event_loop: Literal["uvloop", "asyncio"] = Field(default="uvloop", alias="DEBATE_EVENT_LOOP")

    # what chat users may start (the CLI on the host is the operator and is not limited by these)
    debate_max_running_per_user: int = Field(default=2, ge=1, alias="DEBATE_MAX_RUNNING_PER_USER")
    debate_max_running_per_channel: int = Field(default=3, ge=1, alias="DEBATE_MAX_RUNNING_PER_CHANNEL")
    debate_max_starts_per_user_hour: int = Field(default=10, ge=1, alias="DEBATE_MAX_STARTS_PER_USER_HOUR")
    debate_chat_models: str = Field(default="", alias="DEBATE_CHAT_MODELS")
    debate_chat_max_rounds: int = Field(default=MAX_ROUNDS, alias="DEBATE_CHAT_MAX_ROUNDS")
    debate_chat_max_effort: str = Field(default="high", alias="DEBATE_CHAT_MAX_EFFORT")
    # spend budgets in USD (orchestrator/budgets.py); unset: no budget
    # (finite: `inf` or `1e309` would be no budget at all, set by mistake; 0 refuses every paid start)
    debate_budget_usd_per_workspace_day: float | None = Field(default=None, ge=0, allow_inf_nan=False,
                                                              alias="DEBATE_BUDGET_USD_PER_WORKSPACE_DAY")
    debate_budget_usd_per_user_day: float | None = Field(default=None, ge=0, allow_inf_nan=False,
                                                         alias="DEBATE_BUDGET_USD_PER_USER_DAY")
    debate_budget_usd_per_month: float | None = Field(default=None, ge=0, allow_inf_nan=False,
                                                      alias="DEBATE_BUDGET_USD_PER_MONTH")
    # data that leaves (orchestrator/retention.py): ended debates kept this many days (unset: forever); an
    # uninstalled workspace's data kept this many days (0: purged at once); the audit trail's days
    debate_retention_days: float | None = Field(default=None, gt=0, allow_inf_nan=False,
                                                  alias="DEBATE_RETENTION_DAYS")
    debate_uninstall_grace_days: float = Field(default=0.0, ge=0, allow_inf_nan=False,
                                                alias="DEBATE_UNINSTALL_GRACE_DAYS")
    debate_audit_retention_days: float = Field(default=365.0, gt=0, allow_inf_nan=False,
                                                alias="DEBATE_AUDIT_RETENTION_DAYS")

    # providers: what each one needs, and which CLI tool gets which, is in its spec (orchestrator/providers/vendors)
    openai_api_key: str | None = Field(default=None, alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(default=None, alias="OPENAI_BASE_URL")
    anthropic_api_key: str | None = Field(default=None, alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(default=None, alias="ANTHROPIC_BASE_URL")
    gemini_api_key: str | None = Field(default=None, alias="GEMINI_API_KEY")
    gemini_base_url: str = Field(
        default="https://generativelanguage.googleapis.com/v1beta/openai/", alias="GEMINI_BASE_URL"
    )
    openrouter_api_key: str | None = Field(default=None, alias="OPENROUTER_API_KEY")
    openrouter_base_url: str = Field(default="https://openrouter.ai/api/v1", alias="OPENROUTER_BASE_URL")
    ollama_base_url: str | None = Field(default=None, alias="OLLAMA_BASE_URL")
    vllm_base_url: str | None = Field(default=None, alias="VLLM_BASE_URL")
    vllm_api_key: str | None = Field(default=None, alias="VLLM_API_KEY")
    # the `local:` provider's llama.cpp server (orchestrator/providers/local_server.py); threads unset: the cores
    debate_local_threads: int | None = Field(default=None, ge=1, le=256, alias="DEBATE_LOCAL_THREADS")
    debate_local_ctx: int = Field(default=8192, ge=512, le=1_048_576, alias="DEBATE_LOCAL_CTX")
    debate_local_parallel: int = Field(default=2, ge=1, le=64, alias="DEBATE_LOCAL_PARALLEL")

    # the brief (orchestrator/brief/): fetching user-typed URLs, and what one debate's brief may hold
    debate_fetch: Literal["on", "off"] = Field(default="on", alias="DEBATE_FETCH")
    debate_fetch_allow_hosts: str = Field(default="", alias="DEBATE_FETCH_ALLOW_HOSTS")
    debate_brief_max_sources: int = Field(default=5, ge=1, le=50, alias="DEBATE_BRIEF_MAX_SOURCES")
    debate_brief_max_chars: int = Field(default=200_000, ge=1_000, le=5_000_000, alias="DEBATE_BRIEF_MAX_CHARS")

    @field_validator("debate_database_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// (or postgres://) URL; leave it unset for SQLite at DEBATE_DB")
        return value

    @field_validator("debate_workflow_db_url")
    @classmethod
    def _workflow_db_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://", "sqlite:///")):
            raise ValueError("must be a postgresql:// (or postgres://) or sqlite:/// URL; "
                             "leave it unset for the default")
        return value

    @field_validator("debate_proposer", "debate_challenger", "debate_judge", "debate_tiebreak_judge",
                     "debate_judges_text", "debate_chat_models")
    @classmethod
    def _model_names_fit(cls, value: str | None) -> str | None:
        """A model name at most MAX_MODEL_CHARS long, as every surface that takes one holds it."""
        for part in (value or "").split(","):
            if len(part.strip()) > MAX_MODEL_CHARS:
                raise ValueError(f"a model name is at most {MAX_MODEL_CHARS} characters; one here is "
                                 f"{len(part.strip()):,}")
        return value

    @field_validator("debate_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in FORMATS:
            raise ValueError(f"must be one of {', '.join(FORMATS)}")
        return value

    @field_validator("debate_effort", "debate_chat_max_effort")
    @classmethod
    def _known_effort(cls, value: str) -> str:
        if value not in EFFORTS:
            raise ValueError(f"must be one of {', '.join(EFFORTS)}")
        return value

    @field_validator("debate_rounds", "debate_chat_max_rounds")
    @classmethod
    def _rounds_in_range(cls, value: int) -> int:
        if not MIN_ROUNDS <= value <= MAX_ROUNDS:
            raise ValueError(f"must be between {MIN_ROUNDS} and {MAX_ROUNDS}")
        return value

    @field_validator("debate_judges_text")
    @classmethod
    def _jury(cls, value: str) -> str:
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if parts and not MIN_JUDGES <= len(parts) <= MAX_JUDGES:
            raise ValueError(f"must name {MIN_JUDGES} to {MAX_JUDGES} comma-separated provider:model judges")
        if any(not p.partition(":")[2] for p in parts):
            raise ValueError("must be comma-separated provider:model entries, e.g. "
                             "openai:gpt-5-mini,gemini:gemini-2.5-flash")
        return value

    @property
    def debate_judges(self) -> tuple[str, ...]:
        """DEBATE_JUDGES as a tuple (empty: one judge, DEBATE_JUDGE or the seating's choice)."""
        return tuple(p.strip() for p in self.debate_judges_text.split(",") if p.strip())

    @field_validator("debate_chat_models")
    @classmethod
    def _chat_models(cls, value: str) -> str:
        for part in filter(None, (p.strip() for p in value.split(","))):
            provider, sep, model = part.partition(":")
            if not sep or not provider or not model:
                raise ValueError("must be comma-separated provider:model or provider:* entries, e.g. openai:*")
        return value

    @property
    def chat_models(self) -> list[str]:
        """The operator's allowlist for chat (`provider:model` or `provider:*`); empty: every configured
        API provider, and never a `cli:` tool."""
        return [p.strip() for p in self.debate_chat_models.split(",") if p.strip()]

    def secrets(self) -> list[str]:
        """Every configured secret, so outgoing text and logs can be scrubbed of them (a subclass adds its own)."""
        values = [
            self.openai_api_key,
            self.anthropic_api_key,
            self.gemini_api_key,
            self.openrouter_api_key,
            self.vllm_api_key,
            *(_url_password(url) for url in (self.debate_database_url, self.debate_workflow_db_url)),
        ]
        return [v for v in values if v and len(v) >= 6]


S = TypeVar("S", bound=Settings)


def load_settings(kind: type[S] = Settings, **overrides: object) -> S:  # type: ignore[assignment]
    """Build `kind` (Settings, or a subclass adding a platform's) or raise ConfigError with one readable
    line naming the variable and the fix. The configured secrets are scrubbed from user text from then
    on (orchestrator/safety.py)."""
    try:
        settings = kind(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        if not first["loc"]:  # a rule across variables: its input is every setting, secrets included
            raise ConfigError(f"{str(first['msg']).removeprefix('Value error, ')}; fix it in the environment "
                              "or .env") from None
        field = str(first["loc"][0])
        alias = kind.model_fields[field].alias if field in kind.model_fields else field
        message = str(first["msg"]).removeprefix("Value error, ")
        got = _shown_value(alias or field, first.get("input"))
        raise ConfigError(f"{alias or field}: {message} (got {got}); fix it in the environment or .env") from None
    _check_log_path(settings)
    use_configured_secrets(settings.secrets())
    return settings


def _check_log_path(settings: Settings) -> None:
    """A SQLite log needs a folder to live in: a typo there is a bad setting, not an empty log."""
    if settings.debate_database_url is not None or str(settings.debate_db) == ":memory:":
        return
    path = settings.debate_db
    if path.is_dir():
        raise ConfigError(f"DEBATE_DB: {str(path)!r} is a folder; name a file in it, e.g. {str(path / 'debates.db')!r}")
    if not path.parent.is_dir():
        raise ConfigError(f"DEBATE_DB: the folder {str(path.parent)!r} does not exist (got {str(path)!r}); "
                          "create it or fix DEBATE_DB in the environment or .env")


_SECRET_NAMES = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def _shown_value(name: str, value: object) -> str:
    """A rejected value as the error line may show it: never a secret, never a URL's password."""
    if any(part in name.upper() for part in _SECRET_NAMES):
        return "a value, not shown"
    text = re.sub(r"(://[^:/@\s]*:)[^@/\s]*@", r"\1***@", repr(value))
    return text if len(text) <= 80 else f"{text[:60]}… ({len(text):,} characters)"


def _url_password(url: str | None) -> str | None:
    """The password inside a database URL, so it is scrubbed like any other secret."""
    if not url:
        return None
    from urllib.parse import urlsplit

    return urlsplit(url).password
