"""After a restart: the root message of every debate it cut off shows how it ended, on any platform.

`Core.open` fails the debates a restart left "running" (`core.interrupted`); without this their root
messages would say "running" forever. Each is edited once, paced like any other write, to the final
state the sink shows for a failed debate. The platform says how to reach a debate's root (`reach`:
its surface and pacer, or None when it no longer can, e.g. a workspace that uninstalled the app). Best
effort: a message that is gone or a channel the bot can no longer write to is logged and skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bots.thread.coalesce import Paced
from bots.thread.keys import ROOT
from bots.thread.pacing import Pacer, Urgency
from bots.thread.surface import Ended, Surface
from orchestrator.app import Core
from orchestrator.log import DebateRecord

log = logging.getLogger(__name__)

Reach = Callable[[DebateRecord], Awaitable[tuple[Surface[Any], Pacer] | None]]


async def announce_interrupted(core: Core, platform: str, reach: Reach) -> None:
    """Edit the root message of every debate of `platform` in `core.interrupted`; never raises."""
    await asyncio.gather(*(_announce_guarded(core, platform, reach, debate_id) for debate_id in core.interrupted))


async def _announce_guarded(core: Core, platform: str, reach: Reach, debate_id: str) -> None:
    try:
        await _announce(core, platform, reach, debate_id)
    except Exception as exc:
        log.warning("%s: could not mark interrupted debate %s on its root message: %s", platform, debate_id, exc,
                    exc_info=log.isEnabledFor(logging.DEBUG))


async def _announce(core: Core, platform: str, reach: Reach, debate_id: str) -> None:
    record = await core.store.get_debate(debate_id)
    if record is None or record.platform != platform:
        return
    root_id = await core.store.get_message(debate_id, ROOT)
    spec = record.spec
    if root_id is None or record.channel is None or spec is None:
        log.info("%s: interrupted debate %s has no root message to update", platform, debate_id)
        return
    reached = await reach(record)
    if reached is None:
        log.info("%s: no way to reach interrupted debate %s any more; it keeps its root message", platform, debate_id)
        return
    surface, pacer = reached
    final = Ended(core.interrupted_outcome(record), record.verdict, record.tally)
    await Paced(surface, pacer).edit(root_id, lambda: surface.root(spec, final), Urgency.REPLY, in_thread=False)
    await core.store.set_message(debate_id, ROOT, platform, record.channel, root_id, final=True)
    log.info("%s: marked debate %s as interrupted on its root message", platform, debate_id)
