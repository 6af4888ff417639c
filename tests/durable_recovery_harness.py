"""What test_durable_recovery.py shares with other test modules, moved here so that no test module imports another:
`calls_made_twice`, `kill`."""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter

from tests.fakes.llm_server import FakeLLMServer


def calls_made_twice(srv: FakeLLMServer) -> list[tuple[str, str]]:
    made = Counter((r.model, r.prompt_text) for r in srv.requests)
    return [call for call, times in made.items() if times > 1]


async def kill(proc: asyncio.subprocess.Process) -> float:
    proc.send_signal(signal.SIGKILL)
    killed_at = time.perf_counter()
    assert await proc.wait() == -signal.SIGKILL
    return killed_at
