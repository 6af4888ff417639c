"""SIGINT/SIGTERM → a callback, for the long-running commands (`debate run`, `debate serve`)."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable


def on_stop_signals(callback: Callable[[], object]) -> None:
    """Call `callback` on SIGINT or SIGTERM. Windows loops have no signal handlers: Ctrl-C raises
    KeyboardInterrupt there, which the CLI's top level reports."""
    if sys.platform == "win32":
        return
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, callback)
