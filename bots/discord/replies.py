"""Private answers in Discord: the one place a failure becomes a message for the user."""

from __future__ import annotations

import logging

import discord
from discord import app_commands

from bots.commands import CommandError
from bots.discord.render import safe
from bots.discord.surface import NO_MENTIONS
from orchestrator.app import LOG_UNAVAILABLE
from orchestrator.log import AmbiguousIdError, LogUnavailableError

log = logging.getLogger(__name__)


def no_debate(key: str | None = None) -> str:
    """The one answer for a debate id that names nothing the asker may see: a command's names the id typed
    (`key`); a button's names none (its id was never the clicker's to read)."""
    which = f"debate `{safe(key, 40)}`" if key is not None else "such debate"
    return f"No {which} here; `/debate-history` lists recent ones."


async def reply_privately(interaction: discord.Interaction, text: str) -> None:
    """One ephemeral message, whether or not the interaction was answered already."""
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=NO_MENTIONS)
    else:
        await interaction.response.send_message(text, ephemeral=True, allowed_mentions=NO_MENTIONS)


async def report(interaction: discord.Interaction, error: Exception) -> None:
    """Bad input and refusals are shown as they are; anything else is logged and named, never detailed."""
    cause = error.original if isinstance(error, app_commands.CommandInvokeError) else error
    if isinstance(cause, CommandError | AmbiguousIdError | app_commands.TransformerError
                  | app_commands.CheckFailure):
        text = str(cause)
    elif isinstance(cause, LogUnavailableError):
        log.warning("discord: %s failed: %s", getattr(interaction.command, "name", "a button"), cause)
        text = LOG_UNAVAILABLE
    else:
        log.error("discord: %s failed", getattr(interaction.command, "name", "a button"), exc_info=cause)
        text = f"Something went wrong: {type(cause).__name__}. The details are in the bot's log."
    try:
        await reply_privately(interaction, safe(text, 1900))
    except discord.HTTPException:
        log.warning("could not tell the user about an error", exc_info=True)
