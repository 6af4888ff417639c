"""DEBATE_EVENT_LOOP: the loop a `debate` process runs on, and the loops it starts beside it (the front's HTTP
server loop). A real `debate serve` logging its choice is in tests/test_json_logs.py."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from bots import event_loop
from orchestrator.config import Settings


@pytest.fixture(autouse=True)
def _restore_choice() -> object:
    yield
    event_loop.use("asyncio")


def test_uvloop_is_the_default_and_its_loop_runs_a_coroutine() -> None:
    assert Settings().debate_event_loop == "uvloop"
    loop = event_loop.factory("uvloop")()
    try:
        assert isinstance(loop, uvloop.Loop)
        assert loop.run_until_complete(asyncio.sleep(0, result=42)) == 42
    finally:
        loop.close()


def test_asyncio_is_chosen_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBATE_EVENT_LOOP", "asyncio")
    loop = event_loop.factory(Settings().debate_event_loop)()
    try:
        assert not isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def test_an_unknown_choice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBATE_EVENT_LOOP", "trio")
    with pytest.raises(ValueError, match="DEBATE_EVENT_LOOP"):
        Settings()


def test_the_loops_a_process_starts_are_of_the_kind_it_chose() -> None:
    event_loop.use("uvloop")
    other = event_loop.new_event_loop()
    try:
        assert isinstance(other, uvloop.Loop)
    finally:
        other.close()
    event_loop.use("asyncio")
    other = event_loop.new_event_loop()
    try:
        assert not isinstance(other, uvloop.Loop)
    finally:
        other.close()


def test_without_uvloop_installed_asyncio_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_loop.importlib.util, "find_spec", lambda name: None)
    assert event_loop.factory("uvloop") is asyncio.new_event_loop
