"""llama.cpp's server for the `local:` provider: started the first time a seat needs it, once per process
and model file, shared by every seat and debate in the process, stopped when the process exits.

The server runs in a child process (orchestrator/providers/local_child.py) on loopback, because
xllamacpp's server serves until its process ends. The child reads its stdin until the parent closes it,
so it ends with this process however this one ends (an exit, a crash, kill -9); a clean exit closes the
pipe and waits for it (`stop_all`, registered with atexit). A child that died is started again by the
next call. Starting is blocking work (a process, a model load of a second or more), done in a thread.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

from orchestrator.providers.base import ProviderError

START_TIMEOUT_S = 120.0  # a model load on a busy machine; the 135M model takes a second or two
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """What the child is started with (DEBATE_LOCAL_THREADS, DEBATE_LOCAL_CTX, DEBATE_LOCAL_PARALLEL)."""

    model_path: str
    threads: int
    ctx: int
    parallel: int

    @property
    def slot_ctx(self) -> int:
        """The context of one request: llama.cpp gives each parallel slot n_ctx / n_parallel tokens."""
        return self.ctx // self.parallel


class LocalServer:
    """One llama.cpp server child for one model file."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._url: str | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def url(self) -> str:
        """The server's loopback root URL, starting it first if it is not running (blocking)."""
        with self._lock:
            if not self.running or self._url is None:
                self._url = self._start()
            return self._url

    def _start(self) -> str:
        self._stop()
        config = json.dumps({"model_path": self.options.model_path, "threads": self.options.threads,
                             "ctx": self.options.ctx, "parallel": self.options.parallel})
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "orchestrator.providers.local_child", config],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, close_fds=True,
            )
            line = _first_line(process, START_TIMEOUT_S)
            try:
                answer = json.loads(line) if line else {}
            except json.JSONDecodeError:
                answer = {}
            if "url" not in answer:
                _end(process)
                log.seek(0)
                tail = [x for x in log.read().splitlines() if x.strip()][-1:] or ["no output"]
                why = answer.get("error") or tail[0]
                raise ProviderError(f"local: the llama.cpp server did not start ({why[:200]})")
        self._process = process
        return str(answer["url"])

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        process, self._process, self._url = self._process, None, None
        if process is not None:
            _end(process)


def _first_line(process: subprocess.Popen[str], timeout_s: float) -> str:
    """The child's first line of stdout, or "" when it printed none within `timeout_s`."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline() if process.stdout else ""),
                              daemon=True)
    reader.start()
    reader.join(timeout_s)
    return lines[0].strip() if lines else ""


def _end(process: subprocess.Popen[str]) -> None:
    """Close the child's stdin (it stops its server and exits), then wait; kill it if it will not end."""
    with contextlib.suppress(OSError, ValueError):
        if process.stdin is not None:
            process.stdin.close()
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


_SERVERS: dict[ServerOptions, LocalServer] = {}
_SERVERS_LOCK = threading.Lock()


def server_for(options: ServerOptions) -> LocalServer:
    """The process's server for these options (made, not started, on first ask)."""
    with _SERVERS_LOCK:
        server = _SERVERS.get(options)
        if server is None:
            server = _SERVERS[options] = LocalServer(options)
        return server


def stop_all() -> None:
    """Stop every server this process started (at exit; tests and benches may call it)."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
    for server in servers:
        server.stop()


def default_threads() -> int:
    """Half this process's cores (about the physical ones), at least 1 and at most 8. llama.cpp's threads wait
    for one another at every step: a thread more than the machine has free stalls them all (on two busy cores,
    2 threads generated 0.2 tokens a second where 1 generated 8.8)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 2
    return max(1, min(cores // 2, 8))


atexit.register(stop_all)
