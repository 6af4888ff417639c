"""Run `debate …` (bots.cli) under cProfile timing the main thread's CPU (not wall time):
`python -m bench.profiled OUT.prof worker --name w1 …`.

The profiler is off until SIGUSR1 and off again at SIGUSR2, which also writes the stats to OUT.prof, so a
bench profiles exactly its measuring window (not imports and start-up). Without the signals the whole run
is profiled and written at exit. Other threads (DBOS's queue poller, notification listener and executor
pool) are not profiled: bench.pg.thread_cpu_s splits a process's CPU by thread instead.
"""

from __future__ import annotations

import cProfile
import runpy
import signal
import sys
import time
from types import FrameType


def main() -> None:
    out, args = sys.argv[1], sys.argv[2:]
    sys.argv = ["debate", *args]
    profiler = cProfile.Profile(time.thread_time)
    windowed = False

    def start(_signum: int, _frame: FrameType | None) -> None:
        nonlocal windowed
        windowed = True
        profiler.enable()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        profiler.disable()
        profiler.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    try:
        if "--whole" in sys.argv:
            sys.argv.remove("--whole")
            profiler.runcall(runpy.run_module, "bots.cli", run_name="__main__", alter_sys=True)
        else:
            runpy.run_module("bots.cli", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        if not windowed:
            profiler.dump_stats(out)


if __name__ == "__main__":
    main()
