"""`debate discord-sync`: upload the command tree once, and skip it while the commands are unchanged.

Discord allows about 200 command creates per guild per day, so the tree is never synced on start-up.
The hash of the last payload synced per application and scope is kept in a small JSON file beside
the database (`<DEBATE_DB>.discord-commands.json`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import discord
from pydantic import BaseModel

from bots.discord.client import DebateBot, bot_token, point_discord_at
from orchestrator.app import Core


class SyncResult(BaseModel):
    scope: str  # "global" or the guild id
    synced: bool  # False: unchanged since the last sync, nothing sent
    commands: list[str]
    digest: str


def hash_file(core: Core) -> Path:
    db = Path(core.settings.debate_db)
    return db.with_name(db.name + ".discord-commands.json")


def _read_hashes(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_hashes(path: Path, hashes: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(hashes, indent=2, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


def command_payload(bot: DebateBot) -> list[dict[str, object]]:
    """Exactly what `tree.sync()` would send for the global command set."""
    return [command.to_dict(bot.tree) for command in bot.tree.get_commands()]


async def sync_commands(core: Core, guild: int | None = None, *, force: bool = False) -> SyncResult:
    """Sync the commands globally (takes up to an hour to show) or to one guild (immediate)."""
    point_discord_at(core.settings)
    async with DebateBot(core) as bot:
        await bot.login(bot_token(core.settings))  # runs setup_hook, which registers the commands
        payload = command_payload(bot)
        scope = "global" if guild is None else str(guild)
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        key = f"{bot.application_id}:{scope}"
        path = hash_file(core)
        hashes = _read_hashes(path)
        names = [str(c["name"]) for c in payload]
        if not force and hashes.get(key) == digest:
            return SyncResult(scope=scope, synced=False, commands=names, digest=digest)
        if guild is None:
            await bot.tree.sync()
        else:
            target = discord.Object(id=guild)
            bot.tree.copy_global_to(guild=target)
            await bot.tree.sync(guild=target)
        hashes[key] = digest
        _write_hashes(path, hashes)
        return SyncResult(scope=scope, synced=True, commands=names, digest=digest)
