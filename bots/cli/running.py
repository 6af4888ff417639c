"""Running a debate in this process, for `debate run`, `demo`, `rematch` and `continue`: progress on the
terminal, the outcome as an exit status, and the JSON export on stdout with `--json`."""

from __future__ import annotations

import asyncio
import getpass
import json
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from bots.cli.stdin import StdinAudience
from bots.cli.terminal import TerminalSink
from bots.commands import CommandError, StartDebate, build_spec
from bots.signals import on_stop_signals
from orchestrator.app import Core
from orchestrator.brief.gather import BriefInputError, Material, material_for
from orchestrator.brief.gather import read_brief as read_brief_from
from orchestrator.brief.models import Brief, source_line
from orchestrator.config import Settings
from orchestrator.export import to_json
from orchestrator.models import Outcome
from orchestrator.providers import ProviderRegistry
from orchestrator.quotas import QuotaExceeded

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
NO_BRIEF = Brief()


class UsageError(Exception):
    """Bad usage, or a request the log refuses: exit status 2 and one line."""


def os_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def progress_stream(as_json: bool) -> TextIO:
    """Where the live debate goes: stdout, unless stdout is kept for the JSON export."""
    return sys.stderr if as_json else sys.stdout


async def run_command(command: StartDebate, settings: Settings, *, as_json: bool, interactive: bool = False,
                      context: Sequence[str] = (), brief: Brief = NO_BRIEF) -> int:
    """Start `command` as a new debate and follow it to its end; `interactive`: notes from stdin. `context`:
    the `--context` sources, read into the brief after `brief`'s (a rematch's: the original's)."""
    materials = context_materials(context)
    registry = ProviderRegistry(settings)
    try:
        # the host's user is the operator: no chat policy
        spec, notes = build_spec(command, settings, registry, policy=None, platform="cli", requested_by=os_user())
    except CommandError as exc:
        raise UsageError(str(exc)) from None
    finally:
        await registry.aclose()
    progress = progress_stream(as_json)
    if materials or brief.sources:
        brief = await read_brief(materials, settings, brief, progress)
        spec = spec.model_copy(update={"brief": brief})  # what could not be read: the debate's first notices
    async with await Core.open(settings, role="run") as core:
        assert core.jobs is not None  # the `run` role runs debates in this process
        try:
            await core.admit(spec)  # the operator: no chat quotas, but the global cap
        except QuotaExceeded as exc:
            print(f"debate: {exc}", file=sys.stderr)
            return EXIT_FAILED
        for note in notes:  # only for a debate that runs
            print(f"ℹ {note}", file=progress)
        audience = StdinAudience(core.store, os_user() or "operator") if interactive else None
        return await follow(core, spec.id, as_json,
                            lambda: core.jobs.start(spec, [TerminalSink(progress)], audience=audience))  # type: ignore[union-attr]


def context_materials(context: Sequence[str]) -> list[Material]:
    """The `--context` arguments as materials (local files read now): a bad one is bad usage, before anything."""
    try:
        return [material_for(argument) for argument in context]
    except BriefInputError as exc:
        raise UsageError(str(exc)) from None


async def read_brief(materials: Sequence[Material], settings: Settings, brief: Brief, progress: TextIO) -> Brief:
    """`brief` and `materials` read after it (URLs fetched under DEBATE_FETCH's rules), each source listed."""
    if materials:
        print(f"Reading {len(materials)} source{'s' if len(materials) != 1 else ''} for the brief…", file=progress)
    whole = await read_brief_from(list(materials), settings, brief)
    for source in whole.sources:
        print(f"📎 {source_line(source)}", file=progress)
    return whole


async def follow(core: Core, debate_id: str, as_json: bool, start: Callable[[], asyncio.Task[Outcome]]) -> int:
    """Start the debate's task, stop it on SIGINT/SIGTERM, print the export with `as_json`; the exit status."""
    task = start()
    on_stop_signals(task.cancel)
    outcome = await task
    if as_json:
        record = await core.debate(debate_id)
        if record is not None:
            print(json.dumps(to_json(record), ensure_ascii=False, indent=2))
    if outcome.status == "failed":
        print(f"debate: {outcome.error}", file=sys.stderr)
    return EXIT_OK if outcome.status == "completed" else EXIT_FAILED
