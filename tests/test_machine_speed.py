"""bench.machine_speed: the probe beside a measurement reports how long its fixed work took."""

from __future__ import annotations

import asyncio

import pytest

from bench.machine_speed import SpeedProbe

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


async def test_the_probe_times_its_work_in_a_process_of_its_own() -> None:
    async with SpeedProbe() as probe:
        await asyncio.sleep(0.3)  # the probe samples every 50 ms meanwhile
    assert probe.median_ms is not None and 0 < probe.median_ms < 1000
