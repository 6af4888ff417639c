"""Run the benches: each prints one table. Exit 0 when every bench ran (targets missed included), 1 on an error.

`--smoke` runs the benches that start the product's processes (SIDE_LANES) in `python -m bench` processes
of their own beside the others, so their subprocesses' start-up (imports: ~7 CPU-s each) overlaps the
in-process benches and each other's waits; their tables are printed after the others'. The Postgres
server one bench starts is handed to the next in the same process (bench.pg.shared_servers)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from typing import IO

from bench import BENCHES
from bench.common import machine

SIDE_LANES = (("killharness", "durable"), ("durable_pg",))  # smoke: each lane beside the others, in a process
_ERROR = re.compile(r"^== (\w+): ERROR", re.MULTILINE)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def cpu_s() -> float:
    """CPU seconds of this process and of its children that have exited (the peers, the product's processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_benches(names: list[str], smoke: bool) -> list[str]:
    """Each bench in turn, its table and its wall and CPU printed; the names of those that failed."""
    failed = []
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        began, cpu_began = time.perf_counter(), cpu_s()
        try:
            table = asyncio.run(module.run(smoke))
        except Exception:
            traceback.print_exc()
            print(f"== {name}: ERROR (see the traceback above) ==", flush=True)
            failed.append(name)
            continue
        print(table.render(), flush=True)
        print(f"  ({name}: {time.perf_counter() - began:.1f} s, CPU {cpu_s() - cpu_began:.1f} s)\n", flush=True)
    return failed


class SideLane:
    """`python -m bench --smoke --lane --only …` in a child process, its output kept in a file until the end."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.out: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")
        args = [sys.executable, "-m", "bench", "--smoke", "--lane", *(f"--only={n}" for n in names)]
        self.proc = subprocess.Popen(args, stdout=self.out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def finish(self) -> list[str]:
        """Wait for the lane, print its output; the benches that failed there."""
        code = self.proc.wait()
        self.out.seek(0)
        text = self.out.read()
        self.out.close()
        print(text, end="", flush=True)
        failed = _ERROR.findall(text)
        if code != 0 and not failed:
            failed = [f"lane ({', '.join(self.names)}) exited {code}"]
        return failed

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the lane cleans up like Ctrl-C: servers stopped
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def _shared_postgres(smoke: bool) -> Iterator[None]:
    if not smoke:  # the full run: each bench on a server of its own, as it measures
        yield
        return
    from bench.pg import shared_servers

    with shared_servers():
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="run each bench for a few seconds (CI)")
    parser.add_argument("--only", action="append", choices=BENCHES, metavar="NAME",
                        help=f"run only this bench (repeatable): {', '.join(BENCHES)}")
    parser.add_argument("--serial", action="store_true",
                        help="smoke: every bench in this process, one after the other (undisturbed per-bench figures)")
    parser.add_argument("--lane", action="store_true", help=argparse.SUPPRESS)  # a side lane: no header, no total
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a `timeout` or CI cancel cleans up like Ctrl-C (servers stopped)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    names = args.only or list(BENCHES)
    sides = [[n for n in names if n in lane] for lane in SIDE_LANES] if args.smoke and not args.serial else []
    sides = [side for side in sides if side] if not args.lane else []
    if sides == [names]:  # nothing would run beside it
        sides = []
    if not args.lane:
        shown = "; ".join(", ".join(side) for side in sides)
        print(f"# python -m bench{' --smoke' if args.smoke else ''} · {machine()}"
              f"{f' (side lanes: {shown})' if sides else ''}", flush=True)
    started, cpu_started = time.perf_counter(), cpu_s()
    lanes = [SideLane(side) for side in sides]
    aside = {n for side in sides for n in side}
    try:
        with _shared_postgres(args.smoke):
            failed = run_benches([n for n in names if n not in aside], args.smoke)
        for lane in lanes:
            failed += lane.finish()
    finally:
        for lane in lanes:
            lane.stop()
    if not args.lane:
        print(f"# total {time.perf_counter() - started:.1f} s, CPU {cpu_s() - cpu_started:.1f} s (Postgres servers "
              f"not included); errors: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
