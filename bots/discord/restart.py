"""After a restart: the root message of every Discord debate it cut off shows how it ended.

`Core.open` fails the debates a restart left "running" (`core.interrupted`); without this their root
messages would say "Running" forever. Each is edited once with the bot token, through its channel's
pacer, to the final state the sink shows for a failed debate. Best effort: a deleted message, a
channel the bot can no longer see or write to is logged and skipped.
"""

from __future__ import annotations

import asyncio
import logging

import discord

from bots.discord.render import final_status, root_embed, verdict_embed
from bots.discord.sink import PLATFORM
from bots.discord.writer import ChannelPacers, ChannelWriter
from orchestrator.app import Core

log = logging.getLogger(__name__)


async def announce_interrupted(core: Core, client: discord.Client, pacers: ChannelPacers) -> None:
    """Edit the root message of every Discord debate in `core.interrupted`; never raises."""
    await asyncio.gather(*(_announce_guarded(core, client, pacers, debate_id) for debate_id in core.interrupted))


async def _announce_guarded(core: Core, client: discord.Client, pacers: ChannelPacers, debate_id: str) -> None:
    try:
        await _announce(core, client, pacers, debate_id)
    except discord.HTTPException as exc:
        log.warning("discord: could not mark interrupted debate %s on its root message: %s %s", debate_id,
                    exc.status, exc.text)
    except Exception:
        log.warning("discord: could not mark interrupted debate %s on its root message", debate_id, exc_info=True)


async def _announce(core: Core, client: discord.Client, pacers: ChannelPacers, debate_id: str) -> None:
    record = await core.store.get_debate(debate_id)
    if record is None or record.platform != PLATFORM:
        return
    root_id = await core.store.get_message(debate_id, "root")
    if root_id is None or record.channel is None or record.spec is None:
        log.info("discord: interrupted debate %s has no root message to update", debate_id)
        return
    outcome = await core.interrupted_outcome(record)
    verdict = None if record.verdict is None else verdict_embed(record.spec, record.verdict, outcome, record.tally)
    embed = root_embed(record.spec, status=final_status(outcome, verdict))
    channel = client.get_partial_messageable(int(record.channel))
    await ChannelWriter(channel, pacers(channel.id)).edit(channel.get_partial_message(int(root_id)), embed=embed)
    log.info("discord: marked debate %s as interrupted on its root message", debate_id)
