"""A long-running process sets aside what start-up built (orchestrator/heap.py): start-up's garbage is
collected, what is alive is frozen out of every later full collection, and garbage made afterwards is
still collected."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from orchestrator import heap
from tests.durable_harness import DurableBackend, worker_host
from tests.fakes.llm_server import FakeLLMServer


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_settle_collects_start_ups_garbage_and_freezes_what_is_alive() -> None:
    kept = [Node() for _ in range(100)]
    dropped = cycle()
    frozen = heap.settle()
    assert dropped() is None  # collected first, not frozen
    assert frozen == gc.get_freeze_count() > len(kept)
    tracked = {id(o) for o in gc.get_objects()}
    assert not any(id(node) in tracked for node in kept)  # out of the collector's passes


def test_garbage_made_after_settling_is_still_collected() -> None:
    heap.settle()
    later = cycle()
    gc.collect()
    assert later() is None


def test_after_settling_thousands_of_new_objects_make_no_young_pass() -> None:
    heap.settle()
    passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(count)
    try:
        # a few reads' worth of events, alive at once: far more than CPython's default of 700
        alive = [{"event": "text"} for _ in range(5_000)]
        assert len(alive) == 5_000
    finally:
        gc.callbacks.remove(count)
    assert passes == []


@pytest.mark.slow
async def test_a_worker_settles_its_heap_when_it_starts(
    llm_server: FakeLLMServer, tmp_path: Path, system_db: Path
) -> None:
    assert gc.get_freeze_count() == 0
    backend = DurableBackend.sqlite(system_db)
    async with worker_host(llm_server, backend.log(tmp_path), backend):
        assert gc.get_freeze_count() > 10_000  # the SDKs, DBOS and SQLAlchemy, imported and built
