"""How many debates a worker process runs at once: `--concurrency N` when given, else DEBATE_MAX_CONCURRENT up to
WORKER_CONCURRENCY (an operator admitting 1,000 debates does not have one process interleave all 1,000)."""

from __future__ import annotations

from pathlib import Path

from bots.settings import load_settings
from orchestrator.durable.worker import WORKER_CONCURRENCY, WorkerHost
from orchestrator.log import open_log
from orchestrator.providers import ProviderRegistry


def host(tmp_path: Path, max_concurrent: int, concurrency: int | None = None) -> WorkerHost:
    settings = load_settings(DEBATE_DB=str(tmp_path / "d.db"), DEBATE_MAX_CONCURRENT=max_concurrent)
    return WorkerHost(settings, open_log(settings.debate_db), ProviderRegistry(settings), executor_id="worker-t",
                      concurrency=concurrency)


def test_a_worker_runs_the_admitted_limit_at_once_up_to_its_own_cap(tmp_path: Path) -> None:
    assert host(tmp_path, 50).concurrency == 50
    assert host(tmp_path, 1000).concurrency == WORKER_CONCURRENCY == 200
    assert host(tmp_path, 1000, concurrency=500).concurrency == 500  # --concurrency is the operator's word
