"""bots/web.py `listen` on a default port two processes share: a port another process starts listening on between
our bind and our listen (both bound with SO_REUSEADDR, as two `debate worker` started at once are) is taken, and
the next port is used, on uvloop as on asyncio's loop; with no port left to try it is a ConfigError naming it."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import aiohttp
import pytest

from bots import event_loop
from bots.web import HEALTH_PATH, WebFront
from orchestrator.config import ConfigError


def _two_free_ports() -> tuple[socket.socket, int]:
    """A socket bound (SO_REUSEADDR, not listening) to a port whose next port is free, and that port."""
    for _ in range(50):
        rival = socket.socket()
        rival.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        rival.bind(("127.0.0.1", 0))
        port = rival.getsockname()[1]
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port + 1))
                return rival, port
            except OSError:
                rival.close()
    raise AssertionError("no two free ports in a row")


@pytest.fixture(params=["uvloop", "asyncio"])
def loop_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(event_loop, "_chosen", event_loop.factory(request.param))  # the server's loop is of this kind
    return str(request.param)


@pytest.fixture
def raced(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A port the rival listens on just after we bind it, before we listen."""
    rival, port = _two_free_ports()
    bind = socket.socket.bind

    def bind_then_the_rival_listens(self: socket.socket, address: object) -> None:
        bind(self, address)
        if self is not rival and isinstance(address, tuple) and address[1] == port:
            rival.listen()

    monkeypatch.setattr(socket.socket, "bind", bind_then_the_rival_listens)
    yield port
    rival.close()


async def test_a_port_taken_between_bind_and_listen_moves_to_the_next(loop_kind: str, raced: int) -> None:
    async with WebFront().listen("127.0.0.1", raced, tries=2) as bound, aiohttp.ClientSession() as http:
        assert bound == raced + 1
        async with http.get(f"http://127.0.0.1:{bound}{HEALTH_PATH}") as response:
            assert response.status == 200


async def test_a_port_taken_with_none_left_to_try_is_a_config_error_naming_it(loop_kind: str, raced: int) -> None:
    with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{raced} "):
        async with WebFront().listen("127.0.0.1", raced):
            pass
