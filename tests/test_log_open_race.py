"""Several processes opening one new log at once (a front and workers starting together) all succeed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser

OPEN_ONCE = """
import asyncio, sys
from orchestrator.log import open_log

async def main() -> None:
    log = open_log(sys.argv[1], runner="race")
    await log.start()
    await log.close()

asyncio.run(main())
"""


def test_processes_opening_a_new_log_together_all_succeed(tmp_path: Path) -> None:
    for attempt in range(4):
        db = tmp_path / f"race-{attempt}.db"
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_ONCE, str(db)], stderr=subprocess.PIPE, text=True)
                 for _ in range(6)]
        failures = [p.communicate(timeout=60)[1] for p in procs if p.wait(timeout=60) != 0]
        assert not failures, failures[0][-500:]
        assert db.exists() and (db.stat().st_mode & 0o777) == 0o600
