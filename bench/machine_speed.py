"""How fast this shared machine runs Python at the moment: a probe beside a measurement (issue 24, round 16).

The same debates cost this machine anywhere from 9 to 14 ms of CPU a model call within one hour, and a fixed
piece of pure-Python work (a JSON round trip of 20,000 keys, twice) took 25 to 55 ms of CPU from one half second
to the next with nothing else of ours running: the cores we are given run the same instructions at changing
speeds. So a CPU figure is read beside the machine's speed while it was taken. `SpeedProbe` runs `python -m
bench.machine_speed` in a process of its own for the length of a measurement: every INTERVAL_S it times
`unit()` in CPU time (~1 ms of work: ~2 % of one core), and at the end says the median. It tracks the
machine only in part (within one comparison its median moved from 0.73 to 1.21 ms, and the runs it called slow
measured anywhere from 0.9× to 1.4× the CPU a call of the others), so read the pairs' medians, with the probe
beside them saying how much the machine moved.
"""

from __future__ import annotations

import asyncio
import json
import signal
import statistics
import sys
import time
from types import FrameType

INTERVAL_S = 0.05


def unit() -> int:
    """A fixed piece of pure-Python work, the mix a debate process does (dicts, strings, JSON)."""
    table = {f"key-{i}": {"n": i, "text": f"word {i} " * 3} for i in range(400)}
    text = json.dumps(table)
    again = json.loads(text)
    return sum(len(v["text"].split()) for v in again.values()) + len(text.replace("word", "w"))


def main() -> None:
    samples: list[float] = []
    stop = False

    def finish(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, finish)
    unit()  # warm
    while not stop:
        started = time.process_time()
        unit()
        samples.append((time.process_time() - started) * 1000)
        if len(samples) == 1:
            print(json.dumps({"ready": True}), flush=True)  # a stop from now on reports a median
        time.sleep(INTERVAL_S)
    print(json.dumps({"median_ms": statistics.median(samples) if samples else None, "samples": len(samples)}),
          flush=True)


class SpeedProbe:
    """`async with SpeedProbe() as probe:` around a measurement; then `probe.median_ms` (None: it did not run)."""

    def __init__(self) -> None:
        self._process: asyncio.subprocess.Process | None = None
        self.median_ms: float | None = None

    async def __aenter__(self) -> SpeedProbe:
        self._process = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.machine_speed",
                                                             stdout=asyncio.subprocess.PIPE)
        assert self._process.stdout is not None
        await self._process.stdout.readline()  # its first sample taken (a loaded machine starts it slowly)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        out, _ = await process.communicate()
        try:
            self.median_ms = json.loads(out.decode().strip().splitlines()[-1])["median_ms"]
        except (ValueError, IndexError, KeyError):
            self.median_ms = None


if __name__ == "__main__":
    main()
