"""Run `debate …` (bots.cli) under cProfile timing the main thread's CPU (not wall time):
`python -m bench.profiled OUT.prof worker --name w1 …`.

The profiler is off until SIGUSR1 and off again at SIGUSR2, which also writes the stats to OUT.prof, so a
bench profiles exactly its measuring window (not imports and start-up). Without the signals the whole run
is profiled and written at exit. Other threads (DBOS's queue poller, notification listener and executor
pool) are not profiled: bench.pg.thread_cpu_s splits a process's CPU by thread instead. With
BENCH_PROFILER=yappi (`pip install yappi`) every thread is profiled, on CPU time, into the same pstats file:
yappi's hooks roughly double the CPU, so read its shares, not its seconds.
"""

from __future__ import annotations

import cProfile
import os
import runpy
import signal
import sys
import time
from types import FrameType


class _AllThreads:
    """yappi behind cProfile's enable / disable / dump_stats / runcall."""

    def __init__(self) -> None:
        import yappi

        self._yappi = yappi
        yappi.set_clock_type("cpu")

    def enable(self) -> None:
        self._yappi.start(builtins=False, profile_threads=True)

    def disable(self) -> None:
        self._yappi.stop()

    def dump_stats(self, out: str) -> None:
        self._yappi.get_func_stats().save(out, type="pstat")

    def runcall(self, fn: object, *args: object, **kwargs: object) -> object:
        self.enable()
        try:
            return fn(*args, **kwargs)  # type: ignore[operator]
        finally:
            self.disable()


def main() -> None:
    out, args = sys.argv[1], sys.argv[2:]
    sys.argv = ["debate", *args]
    profiler = _AllThreads() if os.environ.get("BENCH_PROFILER") == "yappi" else cProfile.Profile(time.thread_time)
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
