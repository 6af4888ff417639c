"""A TCP proxy in front of a PostgreSQL server that counts the round trips its clients make, and the statements.

A round trip is a message the server answers with ReadyForQuery, which psycopg always waits for: Sync (the
end of a statement outside a pipeline, and of each batch a pipeline sends) and Query (the simple protocol:
psycopg's own BEGIN and COMMIT outside a pipeline). A Flush is not counted: psycopg sends one right after
the Sync that ends a pipeline, in the same wait (so a pipeline reading answers with Flush alone would go
uncounted; the log's never does). The proxy counts what clients send before passing it on, so a count
read after a client's call returned includes every message of that call. It runs on a thread and event
loop of its own. Connections through it are made without TLS (`url` turns it off), so messages can be read.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

WAITED_FOR = {ord("S"), ord("Q")}  # Sync, Query
STATEMENTS = {ord("E"), ord("Q")}  # Execute (the extended protocol), Query (the simple one): one statement each
_NEGOTIATIONS = {80877103, 80877104}  # SSLRequest, GSSENCRequest: a one-byte answer, then the startup message


class _Reader:
    """Splits one client's byte stream into protocol messages and counts those a client waits after."""

    def __init__(self, counter: RoundTrips) -> None:
        self.counter = counter
        self.buffer = bytearray()
        self.started = False  # past the startup message: every message has a type byte

    def feed(self, data: bytes) -> None:
        self.buffer += data
        start = 0
        while True:
            if not self.started:
                if len(self.buffer) - start < 8:
                    break
                length = int.from_bytes(self.buffer[start:start + 4], "big")
                if len(self.buffer) - start < length:
                    break
                self.started = int.from_bytes(self.buffer[start + 4:start + 8], "big") not in _NEGOTIATIONS
                start += length
                continue
            if len(self.buffer) - start < 5:
                break
            length = int.from_bytes(self.buffer[start + 1:start + 5], "big")
            if len(self.buffer) - start < 1 + length:
                break
            kind = self.buffer[start]
            if kind in WAITED_FOR or kind in STATEMENTS:
                self.counter.add(waited=kind in WAITED_FOR, statement=kind in STATEMENTS)
            start += 1 + length
        del self.buffer[:start]


class RoundTrips:
    """`with RoundTrips.running(url) as trips:` connect to `trips.url` instead; `trips.count` so far."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.count = 0
        self.statements = 0  # statements executed (a pipeline's BEGIN and COMMIT count, like any)
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="pg-round-trips", daemon=True)
        self._target = ""
        self._open: set[asyncio.StreamWriter] = set()

    @classmethod
    @contextmanager
    def running(cls, url: str) -> Iterator[RoundTrips]:
        parts = urlsplit(url)
        trips = cls(parts.hostname or "127.0.0.1", parts.port or 5432)
        trips._target = url
        trips._thread.start()
        try:
            trips._server = asyncio.run_coroutine_threadsafe(
                asyncio.start_server(trips._serve, "127.0.0.1", 0), trips._loop).result(10)
            yield trips
        finally:
            trips._stop()

    @property
    def url(self) -> str:
        """The target URL through the proxy, TLS and GSS encryption off."""
        return self.through(self._target)

    def through(self, url: str) -> str:
        """`url` (a database of the same server) through the proxy, TLS and GSS encryption off."""
        assert self._server is not None
        parts = urlsplit(url)
        port = self._server.sockets[0].getsockname()[1]
        netloc = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        query = "&".join(q for q in (parts.query, "sslmode=disable&gssencmode=disable") if q)
        return urlunsplit((parts.scheme, f"{netloc}127.0.0.1:{port}", parts.path, query, parts.fragment))

    def add(self, *, waited: bool, statement: bool) -> None:
        with self._lock:
            self.count += waited
            self.statements += statement

    async def _serve(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        try:
            server_in, server_out = await asyncio.open_connection(self.host, self.port)
        except OSError:
            client_out.close()
            return
        reader = _Reader(self)
        self._open.update((client_out, server_out))
        await asyncio.gather(self._pump(client_in, server_out, reader), self._pump(server_in, client_out, None),
                             return_exceptions=True)
        self._open.difference_update((client_out, server_out))

    @staticmethod
    async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, reader: _Reader | None) -> None:
        try:
            while data := await source.read(65536):
                if reader is not None:
                    reader.feed(data)
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()

    def _stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for writer in self._open:
                writer.close()  # each pump's other end sees the end of its stream
            await asyncio.gather(*(t for t in asyncio.all_tasks() if t is not asyncio.current_task()),
                                 return_exceptions=True)
            if self._server is not None:
                await self._server.wait_closed()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop.close()
