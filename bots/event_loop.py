"""The event loop a `debate` process runs on (DEBATE_EVENT_LOOP): uvloop's, the default where it is
installed, or asyncio's own (`asyncio`, or wherever uvloop is not, as on Windows).

uvloop runs the same asyncio code with the loop, its transports and its timers written in C. A durable
debate is mostly the loop's own work: many small reads of streamed answers, many short database round
trips, one task switch each, so it takes less CPU per model call. The front's HTTP server loop (bots/web.py) is
made by the same factory as the main loop.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from collections.abc import Callable
from typing import Literal

log = logging.getLogger(__name__)

EventLoopChoice = Literal["uvloop", "asyncio"]
Factory = Callable[[], asyncio.AbstractEventLoop]

_chosen: Factory = asyncio.new_event_loop


def factory(choice: EventLoopChoice) -> Factory:
    """The loop factory for `choice`: uvloop's if asked for and installed, else asyncio's."""
    if choice == "uvloop":
        if importlib.util.find_spec("uvloop") is not None:
            import uvloop

            return uvloop.new_event_loop
        log.info("uvloop is not installed: running on asyncio's event loop")
    return asyncio.new_event_loop


def use(choice: EventLoopChoice) -> Factory:
    """Choose this process's event loop: the factory the main loop and every other loop it starts use."""
    global _chosen
    _chosen = factory(choice)
    log.info("event loop: %s", "asyncio" if _chosen is asyncio.new_event_loop else "uvloop")
    return _chosen


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop of the kind this process chose (asyncio's until `use` is called)."""
    return _chosen()
