"""Work for the main loop held back while the HTTP server's loop is answering a burst (bots/web.py).

A slash command is answered on the server's loop and its dispatch (bolt, the command's work: starting a
debate) runs on the main loop. When commands come in a burst, the first ones' dispatch would run on the
main thread while the later ones still wait for their answer, and the server's thread waits for the GIL
at every system call of theirs. So a dispatch first waits on a gate (`BurstGates.gate`) that opens once
no request routed to the server's loop has been in flight for `quiet_s`, or `hold_max_s` after the oldest
gate still shut: the 200s of a burst go out first, its work follows a few milliseconds later, in order.

Work already on the main loop (a debate's streaming, the log's commits) competes for the GIL too, and a
gate cannot hold it back. So when a burst begins the main loop is parked: a callback on it blocks on an
event (releasing the GIL) until the burst is answered, a request needs the main loop (`unpark`), or
`park_max_s` has passed. The next park waits as long as the last one lasted, so the main loop runs at
least half the time however steady the stream of requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import Future, InvalidStateError

QUIET_S = 0.002  # no request in flight for this long: the burst is over
HOLD_MAX_S = 0.2  # a steady stream of requests holds work back no longer than this
PARK_MAX_S = 0.05  # the main loop waits for a burst's answers no longer than this


class BurstGates:
    """Gates for work on other loops, opened by the server's loop (`server`, the only loop that calls these)."""

    def __init__(self, server: asyncio.AbstractEventLoop, *, quiet_s: float = QUIET_S,
                 hold_max_s: float = HOLD_MAX_S, main: asyncio.AbstractEventLoop | None = None,
                 park_max_s: float = PARK_MAX_S) -> None:
        self._server = server
        self._main = main  # the loop parked during a burst (None: none is)
        self._park_max_s = park_max_s
        self._park: threading.Event | None = None  # set: the main loop, parked for this burst, goes on
        self._parked_at = 0.0
        self._next_park = 0.0  # no park before this (server loop time): the main loop runs at least half the time
        self._quiet_s = quiet_s
        self._hold_max_s = hold_max_s
        self._shut: list[Future[None]] = []
        self._in_flight = 0
        self._quiet: asyncio.TimerHandle | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def gate(self) -> Future[None]:
        """A future that completes once this burst is answered (await it with `asyncio.wrap_future`)."""
        gate: Future[None] = Future()
        self._shut.append(gate)
        if self._deadline is None:
            self._deadline = self._server.call_later(self._hold_max_s, self.open_all)
        self._arm()
        return gate

    def started(self) -> None:
        """A request routed to the server's loop began: the main loop parks until the burst is answered."""
        self._in_flight += 1
        if self._main is not None and self._park is None and self._server.time() >= self._next_park:
            self._park, self._parked_at = threading.Event(), self._server.time()
            with contextlib.suppress(RuntimeError):  # the main loop is closed: nothing to hold back
                self._main.call_soon_threadsafe(self._park.wait, self._park_max_s)
        if self._quiet is not None:
            self._quiet.cancel()
            self._quiet = None

    def ended(self) -> None:
        self._in_flight -= 1
        self._arm()

    def _arm(self) -> None:
        if (self._shut or self._park is not None) and self._in_flight == 0:
            if self._quiet is not None:
                self._quiet.cancel()
            self._quiet = self._server.call_later(self._quiet_s, self.open_all)

    def open_all(self) -> None:
        """Every gate open, oldest first (also when the server stops)."""
        for timer in (self._quiet, self._deadline):
            if timer is not None:
                timer.cancel()
        self._quiet = self._deadline = None
        self.unpark()
        shut, self._shut = self._shut, []
        for gate in shut:
            with contextlib.suppress(InvalidStateError):  # its waiter was cancelled (the process is stopping)
                gate.set_result(None)

    def unpark(self) -> None:
        """The main loop goes on now (a request needs it, or the burst is answered)."""
        if self._park is not None:
            self._park.set()
            self._park = None
            now = self._server.time()
            self._next_park = now + min(now - self._parked_at, self._park_max_s)
