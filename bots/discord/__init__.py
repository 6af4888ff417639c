"""Discord adapter: `/debate` in a public thread, live turns, persistent votes and quotes."""

from bots.discord.client import DebateBot, point_discord_at, run_discord
from bots.discord.sync import SyncResult, sync_commands

__all__ = ["DebateBot", "SyncResult", "point_discord_at", "run_discord", "sync_commands"]
