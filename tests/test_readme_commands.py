"""Every command block in the README runs as printed on one host: each `debate …` line is run by a shell
in a fresh folder, against the loopback LLM peer (the providers' keys and base URLs in the environment,
as the README's own `export` lines set them), and must succeed. `debate worker` lines run together per
block, until each answers GET /healthz, then stop on SIGTERM.

What cannot run on one host without credentials or other servers is listed in SKIPPED, with why; a
README line that is neither run nor listed fails `test_every_readme_command_is_run_or_skipped_with_a_reason`.
The README's example debate id (EXAMPLE_ID) stands for a debate of this run: it is replaced by the id
of the first debate the block's `debate run` lines logged.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import signal
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.cli_harness import clean_env
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.format_stances_harness import envelope, is_split
from tests.llm_scripts import script_judge

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EXAMPLE_ID = "3f2a9c01"
HEALTH_LINE = re.compile(r"GET /healthz on http://[^:\s]+:(\d+)")

SKIPPED: dict[str, str] = {
    "make demo": "creates .venv and installs the project; `make test`, which CI runs, does the same first",
    "make test": "the whole suite, of which this test is part; CI runs it",
    "export ": "sets a provider's key; this test sets the same variables, pointed at the LLM peer",
    "debate serve": "needs Slack or Discord credentials; tests/test_serve.py runs it against the platform peers",
    "debate link": "needs DEBATE_PUBLIC_URL; tests/test_page_link_cli.py runs it and opens the links it prints",
    "debate run \"Should ingest move to a queue?\" --context": "reads files and a link the example names; "
        "tests/test_brief_cli.py runs --context with a PDF, a Markdown file and a loopback page",
    "debate rematch 3f2a9c01 --context": "reads a file the example names; tests/test_brief_cli.py rematches a "
        "debate with a brief",
    "debate continue 3f2a9c01 --context": "reads a file the example names; tests/test_brief_cli.py continues "
        "with --context",
    "debate discord-sync": "needs Discord credentials; tests/test_discord.py syncs against the Discord peer",
    "debate migrate-log --to postgresql://": "needs a Postgres server at the example's host; "
                                             "tests/test_postgres_log.py migrates into the test server",
}
LONG_RUNNING = "debate worker"


def readme_blocks() -> list[tuple[int, list[str]]]:
    """The fenced blocks holding commands: their first line number, and each command line in them (`sh`
    blocks, and `debate …` lines of untagged ones; output after `$ ` and chat `/debate` lines are not commands)."""
    blocks: list[tuple[int, list[str]]] = []
    lines = README.read_text(encoding="utf-8").splitlines()
    inside, shell, start, body = False, False, 0, []
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            if inside:
                commands = [c for c in body if c.strip() and not c.lstrip().startswith("#")
                            and (shell or c.startswith("debate "))]
                if commands:
                    blocks.append((start, commands))
                inside = False
            else:
                inside, shell, start, body = True, line.strip() in ("```sh", "```bash", "```shell"), number, []
            continue
        if inside:
            body.append(line)
    return blocks


def skip_reason(command: str) -> str | None:
    return next((why for prefix, why in SKIPPED.items() if command.startswith(prefix)), None)


def test_every_readme_command_is_run_or_skipped_with_a_reason() -> None:
    commands = [c for _, block in readme_blocks() for c in block]
    assert sum(c.startswith("debate run ") for c in commands) >= 4, "the README's examples were not found"
    unknown = [c for c in commands if skip_reason(c) is None and not c.startswith("debate ")]
    assert not unknown, f"README commands this test neither runs nor skips: {unknown}"


def peer_env(tmp_path: Path, srv: FakeLLMServer) -> dict[str, str]:
    """What the README's `export` lines set, pointed at the peer; `debate` on PATH, as after `make`."""
    return clean_env(tmp_path, OPENAI_API_KEY="sk-test-openai-key", OPENAI_BASE_URL=srv.openai_base_url,
                     ANTHROPIC_API_KEY="sk-ant-test-key-123456", ANTHROPIC_BASE_URL=srv.anthropic_base_url,
                     GEMINI_API_KEY="gemini-test-key-123", GEMINI_BASE_URL=srv.openai_base_url,
                     DEBATE_ROUNDS="1")  # as a .env may: the same commands, a shorter run


def script_peer(srv: FakeLLMServer) -> None:
    """A judge that names a winner and a stances split, so every format the README runs completes."""
    script_judge(srv, "A")
    stances = ["Follow the sun", "One rotation", "No pager at all"]
    srv.add_rule(Reply(text=json.dumps({"debatable": True, "stances": stances, "reason": "Three camps."})), is_split)
    srv.add_rule(Reply(text=envelope(stances[0], "Evidence: the 2023 incident review", done=True)),
                 lambda r: "of up to 3" in r.last_user)


async def shell(line: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", line, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.slow
async def test_the_readme_debate_commands_run_as_printed(tmp_path: Path) -> None:
    ran: list[str] = []
    async with FakeLLMServer() as srv:
        script_peer(srv)
        env = peer_env(tmp_path, srv) | {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
        debate_id: str | None = None
        for _, block in readme_blocks():
            for line in block:
                if skip_reason(line) is not None or line.startswith(LONG_RUNNING):
                    continue
                if EXAMPLE_ID in line:
                    assert debate_id is not None, f"{line!r} comes before any debate was run"
                    line = line.replace(EXAMPLE_ID, debate_id)
                code, _, err = await shell(line, tmp_path, env)
                assert code == 0, f"{line!r} exited {code}: {err[-1500:]}"
                assert "Traceback" not in err, f"{line!r}: {err[-1500:]}"
                ran.append(line)
                if debate_id is None and line.startswith("debate run "):
                    _, listed, _ = await shell("debate history --json", tmp_path, env)
                    debate_id = json.loads(listed)["debates"][0]["id"]
    assert json.loads((tmp_path / "debate.json").read_text())["topic"] == "..."
    assert (tmp_path / "debate.md").read_text().startswith("#")
    assert any(line.startswith("debate continue") for line in ran) and any("rematch" in line for line in ran)


async def healthy_port(proc: asyncio.subprocess.Process, line: str) -> int:
    """The port the worker says its /healthz listens on, once it answers 200 there."""
    assert proc.stderr is not None
    while True:
        said = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert said, f"{line!r} exited before it was healthy"
        found = HEALTH_LINE.search(said)
        if found:
            break
    port = int(found.group(1))
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/healthz") as response:
        assert response.status == 200, await response.text()
    return port


def worker_blocks() -> list[tuple[int, list[str]]]:
    """The blocks with `debate worker` lines, less those whose every worker line (as the shell reads it) an
    earlier block runs already: the same processes, started the same way."""
    kept: list[tuple[int, list[str]]] = []
    seen: set[tuple[str, ...]] = set()
    for start, block in readme_blocks():
        lines = {tuple(shlex.split(c, comments=True)) for c in block if c.startswith(LONG_RUNNING)}
        if lines and not lines <= seen:
            kept.append((start, block))
        seen |= lines
    return kept


@pytest.mark.slow
@pytest.mark.parametrize("block", worker_blocks(), ids=lambda b: f"README line {b[0]}")
async def test_the_readme_workers_start_together_and_are_healthy(tmp_path: Path, block: tuple[int, list[str]]) -> None:
    """`debate worker --name w1` and `--name w2`, as printed, on one host at once: each healthy on a port of its own."""
    workers = [c for c in block[1] if c.startswith(LONG_RUNNING)]
    env = clean_env(tmp_path) | {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    procs = [await asyncio.create_subprocess_exec(
        *shlex.split(line, comments=True), cwd=tmp_path, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE) for line in workers]
    try:
        ports = [await healthy_port(proc, line) for proc, line in zip(procs, workers, strict=True)]
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        codes = [await asyncio.wait_for(proc.wait(), 60) for proc in procs]
    assert len(set(ports)) == len(workers)
    assert codes == [0] * len(workers)
