"""The platforms' settings (Slack, Discord, Discord's sharding), beside the core's, from the same
environment and `.env`: `BotSettings` is the core's `Settings` with these added, so the core's
configuration knows no platform. `load_settings()` here is what `debate` and the fronts load in main().
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from orchestrator.config import Settings
from orchestrator.config import load_settings as load_core_settings

MIN_WEB_SECRET_BYTES = 32


class BotSettings(Settings):
    # slack
    slack_bot_token: str | None = Field(default=None, alias="SLACK_BOT_TOKEN")
    slack_app_token: str | None = Field(default=None, alias="SLACK_APP_TOKEN")
    slack_signing_secret: str | None = Field(default=None, alias="SLACK_SIGNING_SECRET")
    slack_client_id: str | None = Field(default=None, alias="SLACK_CLIENT_ID")
    slack_client_secret: str | None = Field(default=None, alias="SLACK_CLIENT_SECRET")
    slack_api_base_url: str = Field(default="https://slack.com/api/", alias="SLACK_API_BASE_URL")
    # turns as Slack's native streams (chat.startStream) where the workspace's Tier 2 budget has room
    slack_native_streams: bool = Field(default=False, alias="SLACK_NATIVE_STREAMS")

    # the debate page (bots/page/): the fronts' public base address (unset: no links), and what signs the keys
    debate_public_url: str | None = Field(default=None, alias="DEBATE_PUBLIC_URL")
    debate_web_secret: str | None = Field(default=None, alias="DEBATE_WEB_SECRET")

    # discord
    discord_bot_token: str | None = Field(default=None, alias="DISCORD_BOT_TOKEN")
    discord_guild_ids: str = Field(default="", alias="DISCORD_GUILD_IDS")
    discord_api_base_url: str = Field(default="https://discord.com/api/v10", alias="DISCORD_API_BASE_URL")
    discord_gateway_url: str = Field(default="wss://gateway.discord.gg/", alias="DISCORD_GATEWAY_URL")
    # sharding: unset, one process holds every guild; set, this process connects only DISCORD_SHARD_IDS
    # of DISCORD_SHARD_COUNT shards (a guild's shard is (guild_id >> 22) % count) and renders only their threads
    discord_shard_count: int | None = Field(default=None, ge=1, alias="DISCORD_SHARD_COUNT")
    discord_shard_ids: str = Field(default="", alias="DISCORD_SHARD_IDS")

    @field_validator("debate_public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        """An absolute http(s) address: it is the start of every link the bot posts and every page's
        address (a `javascript:` one would be a link that runs script in a reader's browser)."""
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError("must be the absolute http:// or https:// address the fronts are reached at, "
                             "e.g. https://debates.example.com")
        return value.strip()

    @field_validator("debate_web_secret")
    @classmethod
    def _web_secret(cls, value: str | None) -> str | None:
        """Signs every page's key: a short one is guessed, so it is refused rather than weakened silently."""
        if value is not None and len(value.encode()) < MIN_WEB_SECRET_BYTES:
            raise ValueError(f"must be at least {MIN_WEB_SECRET_BYTES} bytes (random, e.g. the output of "
                             "`openssl rand -hex 32`)")
        return value

    @field_validator("discord_guild_ids")
    @classmethod
    def _guild_ids(cls, value: str) -> str:
        return _numbers(value, "must be comma-separated numeric guild IDs, e.g. 123456789012345678")

    @field_validator("discord_shard_ids")
    @classmethod
    def _shard_ids(cls, value: str) -> str:
        return _numbers(value, "must be comma-separated shard numbers, e.g. 0,1")

    @model_validator(mode="after")
    def _shards_fit(self) -> BotSettings:
        ids = self.shard_ids
        if ids and self.discord_shard_count is None:
            raise ValueError("DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT (the total number of shards)")
        if self.discord_shard_count is not None and any(i >= self.discord_shard_count for i in ids):
            raise ValueError(f"DISCORD_SHARD_IDS must be below DISCORD_SHARD_COUNT ({self.discord_shard_count})")
        return self

    @property
    def shard_ids(self) -> list[int]:
        """This process's Discord shards; empty with DISCORD_SHARD_COUNT set means all of them."""
        return [int(p) for p in self.discord_shard_ids.split(",") if p.strip()]

    def owns_guild(self, guild_id: int | str | None) -> bool:
        """Whether this process's Discord shards hold `guild_id` (always, unsharded; DMs go to shard 0)."""
        count = self.discord_shard_count
        if count is None or not self.shard_ids:
            return True
        shard = (int(guild_id) >> 22) % count if guild_id else 0
        return shard in self.shard_ids

    @property
    def guild_ids(self) -> list[int]:
        return [int(p) for p in self.discord_guild_ids.split(",") if p.strip()]

    def secrets(self) -> list[str]:
        platform = [self.slack_bot_token, self.slack_app_token, self.slack_signing_secret, self.slack_client_secret,
                    self.discord_bot_token, self.debate_web_secret]
        return [*super().secrets(), *(v for v in platform if v and len(v) >= 6)]


def _numbers(value: str, problem: str) -> str:
    """`value` when it is comma-separated numbers (or empty), else ValueError(`problem`)."""
    if not all(part.isdigit() for part in filter(None, (p.strip() for p in value.split(",")))):
        raise ValueError(problem)
    return value


def load_settings(**overrides: object) -> BotSettings:
    """BotSettings, or ConfigError with one readable line naming the variable and the fix."""
    return load_core_settings(BotSettings, **overrides)


def bot_settings(settings: Settings) -> BotSettings:
    """The platforms' settings of a core opened with the core's alone (an embedding, a test): the same
    values, the platform's read from the environment and `.env`."""
    if isinstance(settings, BotSettings):
        return settings
    return load_core_settings(BotSettings, **settings.model_dump(exclude_unset=True))
