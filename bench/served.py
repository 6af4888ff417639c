"""The product as an operator runs it, for the benches that need whole processes: the loopback peers
(Slack Web API, Discord REST + gateway, an LLM server), `debate serve` / `debate serve --front-only` /
`debate worker` as subprocesses configured only through CONTRACT.md's environment names, and the two
ways chat starts a debate (a signed Slack slash command, a Discord interaction on the gateway).

    async with Peers(script) as peers:
        serve = Proc.serve(workdir, peers.env(workdir)); await serve.start(); await serve.ready(peers)
        await peers.slack_command(serve.port, "kill debate 0001: …", channel="C0001")
        serve.kill()  # SIGKILL

A process's output goes to files in its workdir (`serve-1.err`, …), so a chatty process never blocks
on a full pipe, and the tail of its stderr is there to quote when something fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any, BinaryIO

import aiohttp

from tests.fakes.discord_api import TOKEN, DiscordPeer
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import SIGNING_SECRET, SlackAPIPeer, sign, slash_body

ROOT = Path(__file__).resolve().parent.parent
PROVIDER_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "OLLAMA_BASE_URL",
                 "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Peers:
    """The three loopback peers in this process. `llm` may be None when the caller runs its own
    (e.g. bench.llm_peer in a process of its own) and passes its base URLs to `env`."""

    def __init__(self, llm: FakeLLMServer | None = None) -> None:
        self.llm = llm
        self.slack = SlackAPIPeer()
        self.discord = DiscordPeer()
        self._http: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Peers:
        if self.llm is not None:
            await self.llm.start()
        await self.slack.__aenter__()
        await self.discord.__aenter__()
        self._http = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._http is not None
        await self._http.close()
        await self.discord.__aexit__(*exc)
        await self.slack.__aexit__(*exc)
        if self.llm is not None:
            await self.llm.close()

    @property
    def http(self) -> aiohttp.ClientSession:
        assert self._http is not None
        return self._http

    def env(self, workdir: Path, *, openai_url: str | None = None, anthropic_url: str | None = None,
            **extra: str) -> dict[str, str]:
        """A clean environment: nothing from the caller's providers or platforms, the log in `workdir`."""
        if self.llm is not None:
            openai_url = openai_url or self.llm.openai_base_url
            anthropic_url = anthropic_url or self.llm.anthropic_base_url
        assert openai_url and anthropic_url, "no LLM peer: pass its URLs"
        env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARS and not k.startswith("DEBATE_")}
        env |= {
            "PYTHONPATH": str(ROOT), "PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin",
            "DEBATE_DB": str(workdir / "debates.db"), "DEBATE_MAX_RETRIES": "0",
            "OPENAI_API_KEY": "sk-bench-openai", "OPENAI_BASE_URL": openai_url,
            "ANTHROPIC_API_KEY": "sk-ant-bench-anthropic", "ANTHROPIC_BASE_URL": anthropic_url,
            "SLACK_BOT_TOKEN": "xoxb-bench-token", "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_BASE_URL": self.slack.base_url,
            "DISCORD_BOT_TOKEN": TOKEN, "DISCORD_API_BASE_URL": self.discord.api_base_url,
            "DISCORD_GATEWAY_URL": self.discord.gateway_url,
            "DEBATE_MAX_CONCURRENT": "5000", "DEBATE_MAX_RUNNING_PER_USER": "5000",
            "DEBATE_MAX_RUNNING_PER_CHANNEL": "5000", "DEBATE_MAX_STARTS_PER_USER_HOUR": "100000",
        }
        return env | extra

    def signed_command(self, text: str, *, channel: str, user: str = "U0001",
                       trigger: str | None = None) -> tuple[str, dict[str, str]]:
        """A `/debate` slash command's form body and its signed headers, as Slack sends them."""
        body = slash_body(text, channel=channel, user=user, trigger=trigger,
                          response_url=self.slack.response_url(channel))
        return body, {"Content-Type": "application/x-www-form-urlencoded", **sign(SIGNING_SECRET, body)}

    async def slack_command(self, port: int, text: str, *, channel: str, user: str = "U0001",
                            trigger: str | None = None) -> tuple[int, float]:
        """POST a signed `/debate` slash command to /slack/events: (HTTP status, seconds to the answer)."""
        body, headers = self.signed_command(text, channel=channel, user=user, trigger=trigger)
        began = time.perf_counter()
        async with self.http.post(f"http://127.0.0.1:{port}/slack/events", data=body.encode(),
                                  headers=headers) as response:
            await response.read()
            return response.status, time.perf_counter() - began

    async def slack_commands_apart(self, port: int, commands: list[dict[str, Any]]) -> list[tuple[int, float]]:
        """`commands` (each `slack_command`'s keywords and `text`) POSTed at once by a client process of its own
        (bench/ack_client.py): (HTTP status, seconds to the answer) each, timed there, not on this loop."""
        requests = [self.signed_command(**command) for command in commands]
        job = json.dumps({"url": f"http://127.0.0.1:{port}/slack/events", "requests": requests})
        client = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.ack_client", cwd=ROOT,
                                                      stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        out, _ = await client.communicate((job + "\n").encode())
        if client.returncode != 0:
            raise RuntimeError(f"bench.ack_client exited {client.returncode}")
        return [(int(status), float(seconds)) for status, seconds in json.loads(out)]

    async def discord_command(self, options: dict[str, Any], *, user_id: str = "740000000000000001") -> str:
        """Dispatch a `/debate` interaction on the gateway; its interaction id."""
        payload = self.discord.slash_command("debate", options, user_id=user_id)
        await self.discord.dispatch_interaction(payload)
        return str(payload["id"])


class Proc:
    """One product process: `serve`, `serve --front-only` or `worker --name NAME`, restartable."""

    def __init__(self, name: str, args: list[str], workdir: Path, env: dict[str, str], port: int | None) -> None:
        self.name = name
        self.args = args
        self.workdir = workdir
        self.env = env
        self.port = port
        self.proc: asyncio.subprocess.Process | None = None
        self.starts = 0
        self.err_path = workdir / f"{name}.err"
        self.profile_to: Path | None = None  # run under bench.profiled (cProfile), its stats written here

    @classmethod
    def serve(cls, workdir: Path, env: dict[str, str], *, front_only: bool = False, name: str = "serve",
              platforms: tuple[str, ...] = ()) -> Proc:
        """`platforms` ("slack", "discord"): only those (`--slack`, `--discord`); empty: every configured one."""
        port = free_port()
        args = ["serve", *(f"--{p}" for p in platforms), "--host", "127.0.0.1", "--port", str(port)]
        args += ["--front-only"] if front_only else []
        return cls(name, args, workdir, env, port)

    @classmethod
    def worker(cls, workdir: Path, env: dict[str, str], *, worker_name: str = "w1",
               concurrency: int | None = None, healthz: bool = False) -> Proc:
        """`healthz`: give it a /healthz port of its own, so `ready` waits until it takes debates (DBOS
        launched); without, it is ready once it has not exited in its first half second."""
        port = free_port() if healthz else None
        args = ["worker", "--name", worker_name, "--host", "127.0.0.1", "--port", str(port or 0)] + (
            ["--concurrency", str(concurrency)] if concurrency else [])
        return cls(f"worker-{worker_name}", args, workdir, env, port)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def _outputs(self) -> tuple[BinaryIO, BinaryIO]:
        err = open(self.err_path, "ab")  # closed by start() once the child has it
        err.write(f"--- start {self.starts}: debate {' '.join(self.args)}\n".encode())
        err.flush()
        return open(self.workdir / f"{self.name}.out", "ab"), err

    async def start(self) -> None:
        self.starts += 1
        out, err = self._outputs()
        module = ["bench.profiled", str(self.profile_to)] if self.profile_to is not None else ["bots.cli"]
        with out, err:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", *module, *self.args, cwd=self.workdir, env=self.env,
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=err,
            )

    async def ready(self, peers: Peers, *, identifies_before: int | None = None, within: float = 180.0) -> None:
        """Until /healthz answers 200 and (when given) the Discord peer saw a new IDENTIFY. A process
        without a port (a worker) is ready once it has not exited in its first half second."""
        if self.port is None:
            await asyncio.sleep(0.5)
            self.check_alive()
            return
        deadline = time.monotonic() + within
        url = f"http://127.0.0.1:{self.port}/healthz"
        while True:
            self.check_alive()
            with contextlib.suppress(aiohttp.ClientError):
                async with peers.http.get(url) as response:
                    if response.status == 200:
                        break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: /healthz never answered 200 within {within:.0f} s")
            await asyncio.sleep(0.05)
        if identifies_before is not None:
            await peers.discord.wait_for(lambda: peers.discord.identifies > identifies_before,
                                         within=max(1.0, deadline - time.monotonic()))

    def cpu_s(self) -> float:
        """CPU seconds this process has used so far (0 when it is not running)."""
        if not self.running:
            return 0.0
        assert self.proc is not None
        from bench.pg import proc_cpu_s

        return proc_cpu_s(self.proc.pid)

    def profile_window(self, start: bool) -> None:
        """Under bench.profiled: start (SIGUSR1) or end and write (SIGUSR2) the profiled window."""
        if self.profile_to is not None and self.running:
            self.kill(signal.SIGUSR1 if start else signal.SIGUSR2)

    def thread_cpu_s(self) -> dict[str, float]:
        """CPU seconds so far per thread name of this process (numbered threads of a pool summed)."""
        if not self.running:
            return {}
        assert self.proc is not None
        from bench.pg import thread_cpu_s

        return thread_cpu_s(self.proc.pid)

    def check_alive(self) -> None:
        """Raise ProcessExited when the process has exited."""
        if self.proc is not None and self.proc.returncode is not None:
            raise ProcessExited(self.name, self.proc.returncode, self.stderr_tail())

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(sig)

    async def wait(self, within: float = 30.0) -> int | None:
        if self.proc is None:
            return None
        try:
            return await asyncio.wait_for(self.proc.wait(), within)
        except TimeoutError:
            self.proc.kill()
            return await self.proc.wait()

    async def stop(self, within: float = 30.0, *, graceful: bool = True) -> int | None:
        """SIGTERM, then SIGKILL after `within` seconds. Not `graceful`: SIGKILL at once, for a smoke run
        whose measurements are over (an orderly exit costs a process ~1 CPU-s of interpreter teardown;
        tests/test_serve.py and tests/test_durable_serve.py test it)."""
        self.kill(signal.SIGTERM if graceful else signal.SIGKILL)
        return await self.wait(within)

    def stderr_tail(self, lines: int = 6) -> str:
        try:
            text = self.err_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


class ProcessExited(RuntimeError):
    def __init__(self, name: str, code: int, tail: str) -> None:
        super().__init__(f"{name} exited with status {code}: {tail}")
        self.code = code


LogSource = Path | str  # the log: a SQLite file, or a postgresql:// URL (DEBATE_DATABASE_URL)


def read_log(db: LogSource, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Rows from the log through a read-only connection (the harness never writes the product's log).
    `sql` is written for SQLite (`?` placeholders); on Postgres the same text runs with `%s`."""
    if isinstance(db, str):
        from bench.pg import read_rows  # psycopg and the embedded server only when a bench uses Postgres

        return read_rows(db, sql, params)
    if not db.exists():
        return []
    with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=10)) as conn:
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params)]
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise


def integrity(db: Path) -> str:
    """`PRAGMA integrity_check` of a SQLite file: "ok" or the first problems it names."""
    if not db.exists():
        return "missing"
    with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=10)) as conn:
        rows = [r[0] for r in conn.execute("pragma integrity_check")]
    return "ok" if rows == ["ok"] else "; ".join(rows[:3])
