"""Who `GET /metrics` answers (issue 57 item 5), on a real `debate serve` (the port that serves the
debate pages and Slack's events) and a real `debate worker`: on the public port, only a request from this
host that no proxy passed on; with `--metrics-port`, on that listener to its scraper, and not at all on the
public port. Every deployment shape still answers a scrape from its own host, as CONTRACT.md says."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import Mock

import aiohttp
import pytest
from aiohttp.test_utils import make_mocked_request

from bots.web import from_this_host
from tests.cli_harness import clean_env
from tests.durable_serve_harness import serving, slack_env, spawn, stopped
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SlackAPIPeer
from tests.serve_harness import free_port, health_until

PROXIED = ({"X-Forwarded-For": "203.0.113.9"}, {"Forwarded": "for=203.0.113.9;proto=https"},
           {"X-Real-IP": "203.0.113.9"})


async def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers or {}) as response:
        return response.status, await response.text()


def request_from(address: str, headers: dict[str, str] | None = None) -> object:
    transport = Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (address, 5555) if name == "peername" else default
    return make_mocked_request("GET", "/metrics", headers=headers or {}, transport=transport)


def test_only_a_loopback_peer_that_no_proxy_passed_on_is_from_this_host() -> None:
    assert from_this_host(request_from("127.0.0.1")) and from_this_host(request_from("::1"))
    assert from_this_host(request_from("::ffff:127.0.0.1"))
    for address in ("203.0.113.9", "10.0.0.7", "172.18.0.1", "::ffff:198.51.100.4", "2001:db8::1", "not-an-ip"):
        assert not from_this_host(request_from(address)), address  # a unit test: no socket is opened
    for headers in PROXIED:
        assert not from_this_host(request_from("127.0.0.1", headers)), headers


@pytest.mark.slow
async def test_the_front_serves_metrics_to_its_own_host_only_and_on_its_metrics_port(tmp_path: Path) -> None:
    async with FakeLLMServer() as llm, SlackAPIPeer() as slack:
        env = slack_env(tmp_path, llm, slack)
        port = free_port()
        proc = await serving(tmp_path, env, port, "--front-only")
        try:
            status, text = await get(f"http://127.0.0.1:{port}/metrics")
            assert status == 200 and "debate_platform_writes_total" in text
            for headers in PROXIED:  # the public, through a proxy on this host
                status, text = await get(f"http://127.0.0.1:{port}/metrics", headers)
                assert status == 404 and "debate_" not in text, headers
        finally:
            await stopped(proc)

        port, metrics_port = free_port(), free_port()
        proc = await serving(tmp_path, env, port, "--front-only", "--metrics-port", str(metrics_port))
        try:
            status, text = await get(f"http://127.0.0.1:{port}/metrics")
            assert status == 404 and "debate_" not in text, "not on the public port at all"
            status, text = await get(f"http://127.0.0.1:{metrics_port}/metrics", PROXIED[0])
            assert status == 200 and "debate_platform_writes_total" in text
            assert (await get(f"http://127.0.0.1:{metrics_port}/healthz"))[0] == 200
        finally:
            await stopped(proc)


@pytest.mark.slow
async def test_a_worker_serves_metrics_on_its_metrics_port_and_refuses_a_port_clash(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    port, metrics_port = free_port(), free_port()
    proc = await spawn(tmp_path, env, "worker", "--name", "w1", "--host", "127.0.0.1", "--port", str(port),
                       "--metrics-port", str(metrics_port))
    try:
        await health_until(f"http://127.0.0.1:{port}/healthz", proc, 200)
        assert (await get(f"http://127.0.0.1:{port}/metrics"))[0] == 404
        status, text = await get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert status == 200 and "debate_debates_running" in text
    finally:
        await stopped(proc)
    clash = await spawn(tmp_path, env, "worker", "--port", str(port), "--metrics-port", str(port))
    _, err = await clash.communicate()
    assert clash.returncode == 2 and "give /metrics a port of its own" in err.decode(), err.decode()[-500:]
