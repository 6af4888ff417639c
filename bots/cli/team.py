"""`debate continue` and `debate rematch`: the team-in-the-loop commands, run in this process.

The rules are the chat surfaces' own (bots/loop.py): a continue is refused unless the debate completed
with a verdict and has been continued fewer than MAX_CONTINUATIONS times; a rematch replays the topic
with the original's settings unless told otherwise. Both keep the debate's brief; `--context` adds to it.
A refusal exits 2 with its one sentence; a continuation or rematch that runs and fails exits 1, like
`debate run`.
"""

from __future__ import annotations

import argparse

from bots.cli.running import UsageError, context_materials, follow, progress_stream, read_brief, run_command
from bots.cli.terminal import TerminalSink
from bots.commands import CommandError
from orchestrator.app import Core
from orchestrator.brief.models import Brief
from orchestrator.config import Settings
from orchestrator.debate.audience import LogAudience
from orchestrator.log import AmbiguousIdError, DebateRecord
from orchestrator.log.purge import purged_text


async def load(core: Core, debate_id: str) -> DebateRecord:
    try:
        record = await core.debate(debate_id)
    except AmbiguousIdError as exc:
        raise UsageError(str(exc)) from None
    if record is None:
        tomb = await core.purged(debate_id.strip())
        if tomb is not None:
            raise UsageError(purged_text(tomb))
        raise UsageError(f"no debate with id {debate_id!r}; `debate history` lists them")
    return record


async def continue_debate(args: argparse.Namespace, settings: Settings) -> int:
    """One more round of a completed debate, with the new facts (if any) quoted to every debater, then
    a new verdict that says whether the winner changed."""
    from bots.loop import prepare_continuation  # with the chat threads' code: only these two commands need it

    materials = context_materials(args.context)
    async with await Core.open(settings, role="run") as core:
        assert core.jobs is not None
        await load(core, args.id)  # the CLI's own wording for an unknown id
        try:
            before, segment = await prepare_continuation(core, args.id, args.facts, None)
        except CommandError as exc:
            raise UsageError(str(exc)) from None
        record = await load(core, before.id)  # with its turns, as the continuation starts from them
        assert record.spec is not None and record.verdict is not None  # prepare_continuation checked both
        spec, verdict = record.spec, record.verdict
        progress = progress_stream(args.json)
        print(f"Continuing debate {record.id} (continuation {segment - 1})", file=progress)
        if materials or record.sources:  # the brief as it stands, and what this continuation adds
            brief = await read_brief(materials, settings, record.brief, progress)
            for note in brief.notes:
                print(f"ℹ {note}", file=progress)
            if len(brief.sources) > len(record.sources):
                await core.add_sources(record.id, Brief(sources=brief.sources[len(record.sources):]))
            spec = spec.model_copy(update={"brief": brief})
        return await follow(core, record.id, args.json, lambda: core.jobs.start_continuation(  # type: ignore[union-attr]
            spec, [TerminalSink(progress, spec)], segment=segment, history=list(record.turns), previous=verdict,
            rounds_done=record.rounds_completed, carried=(record.input_tokens, record.output_tokens, record.cost_usd),
            audience=LogAudience(core.store), earlier_notes=[n for n in record.interjections if n.round is not None]))


async def rematch(args: argparse.Namespace, settings: Settings) -> int:
    """The same topic as a new debate linked to the original, with other debaters or another format."""
    from bots.loop import rematch_request

    async with await Core.open(settings, role="read") as core:
        original = await load(core, args.id)
    try:
        command = rematch_request(original, vs=args.debaters, format=args.format, judges=args.judges)
    except CommandError as exc:
        raise UsageError(str(exc)) from None
    return await run_command(command, settings, as_json=args.json, context=args.context, brief=original.brief)
