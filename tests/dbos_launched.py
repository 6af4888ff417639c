"""DBOS launched in the test's own process for one test, and shut down after it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from dbos import DBOS


def sqlite_url(folder: Path) -> str:
    """A fresh SQLite system database in `folder`."""
    return f"sqlite:///{folder / 'workflows.sqlite'}"


def config_for(app: str, url: str, executor_id: str, **more: Any) -> dict[str, Any]:
    """DBOS's configuration for a test: quiet, one application version, `more` on top."""
    return {"name": app, "system_database_url": url, "executor_id": executor_id, "application_version": "t",
            "log_level": "WARNING", **more}


@asynccontextmanager
async def launched(config: dict[str, Any]) -> AsyncIterator[None]:
    """DBOS configured and launched; destroyed at the end (the registry of workflows and steps kept for the
    next test) and the loop given back a default executor, since DBOS shuts the one it installs."""
    DBOS(config=config)  # type: ignore[arg-type]
    DBOS.launch()
    try:
        yield
    finally:
        DBOS.destroy(destroy_registry=False)
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
