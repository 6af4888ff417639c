"""Run the benches: each prints one table. Exit 0 when every bench ran (targets missed included), 1 on an error."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import resource
import signal
import sys
import time
import traceback

from bench import BENCHES
from bench.common import machine


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def cpu_s() -> float:
    """CPU seconds of this process and of its children that have exited (the peers, the product's processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="run each bench for a few seconds (CI)")
    parser.add_argument("--only", action="append", choices=BENCHES, metavar="NAME",
                        help=f"run only this bench (repeatable): {', '.join(BENCHES)}")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a `timeout` or CI cancel cleans up like Ctrl-C (servers stopped)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    names = args.only or list(BENCHES)
    print(f"# python -m bench{' --smoke' if args.smoke else ''} · {machine()}", flush=True)
    failed = []
    started, cpu_started = time.perf_counter(), cpu_s()
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        began, cpu_began = time.perf_counter(), cpu_s()
        try:
            table = asyncio.run(module.run(args.smoke))
        except Exception:
            traceback.print_exc()
            print(f"== {name}: ERROR (see the traceback above) ==", flush=True)
            failed.append(name)
            continue
        print(table.render(), flush=True)
        print(f"  ({name}: {time.perf_counter() - began:.1f} s, CPU {cpu_s() - cpu_began:.1f} s)\n", flush=True)
    print(f"# total {time.perf_counter() - started:.1f} s, CPU {cpu_s() - cpu_started:.1f} s (Postgres servers not "
          f"included); errors: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
