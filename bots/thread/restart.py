"""How a front reaches a debate's thread again after a restart, on any platform: `Reach`.

A restarted front resumes every live debate's thread (`tail.FrontTailer.resume`); the platform says how
to reach one from what the log has (channel, thread, workspace): a surface able to write the whole thread
and its root message, with the pacer it shares, or None when it no longer can (e.g. a workspace that
uninstalled the app). Debates a restart cut off are not failed any more: their workflows resume, and a
debate the log calls running with no workflow behind it is failed by the tailer, in its thread.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bots.thread.pacing import Pacer
from bots.thread.surface import Surface
from orchestrator.log import DebateRecord

Reach = Callable[[DebateRecord], Awaitable[tuple[Surface[Any], Pacer] | None]]
