"""The kill harness's processes never lose a trial to a port taken between its pick and its bind (issue 18,
item 15): a real `debate serve` subprocess given a port another socket holds is started again on a fresh
one and answers /healthz there."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from bench.killharness import _move_port, launch
from bench.served import Peers, Proc
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.slow  # processes, DBOS, Postgres or a browser


async def test_a_process_whose_port_was_taken_starts_again_on_a_free_one(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        async with Peers(FakeLLMServer()) as peers:
            proc = Proc.serve(tmp_path, peers.env(tmp_path), platforms=("slack",))
            _move_port(proc, port)  # as if another lane's process bound it after the harness picked it
            try:
                await launch(proc, peers)
                assert proc.port is not None and proc.port != port and proc.starts == 2
                async with peers.http.get(f"http://127.0.0.1:{proc.port}/healthz") as response:
                    assert response.status == 200
                assert "cannot listen" in proc.err_path.read_text()
            finally:
                await proc.stop(20)
