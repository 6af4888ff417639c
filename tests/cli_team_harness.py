"""What test_cli_team.py shares with other test modules, moved here so that no test module imports another:
`debate_with_stdin`."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path


async def debate_with_stdin(tmp_path: Path, stdin: str, *args: str, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bots.cli", *args, cwd=tmp_path, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 120)
    return proc.returncode or 0, out.decode(), err.decode()
