"""Run the benches: each prints one table. Exit 0 when every bench ran (targets missed included), 1 on an error."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import sys
import time
import traceback

from bench import BENCHES
from bench.common import machine


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


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
    started = time.perf_counter()
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        began = time.perf_counter()
        try:
            table = asyncio.run(module.run(args.smoke))
        except Exception:
            traceback.print_exc()
            print(f"== {name}: ERROR (see the traceback above) ==", flush=True)
            failed.append(name)
            continue
        print(table.render(), flush=True)
        print(f"  ({name}: {time.perf_counter() - began:.1f} s)\n", flush=True)
    print(f"# total {time.perf_counter() - started:.1f} s; errors: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
