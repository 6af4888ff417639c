"""The `debate` command line. Errors become one readable line on stderr here, and only here."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bots import event_loop
from bots.cli.data import add_audit_parser, add_purge_parser, audit_command, purge_command
from bots.cli.demo import demo
from bots.cli.link import link
from bots.cli.running import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError, run_command
from bots.cli.team import continue_debate, load, rematch
from bots.cli.terminal import Style, render_history, render_hits, render_record
from bots.cli.usage import add_parser as add_usage_parser
from bots.cli.usage import since_of, usage_command
from bots.commands import CommandError, StartDebate, start_request
from bots.settings import load_settings

if TYPE_CHECKING:
    from bots.serve import MetricsListener
from orchestrator.app import Core
from orchestrator.config import ConfigError, Settings
from orchestrator.export import to_json, to_markdown
from orchestrator.log import StoreError
from orchestrator.logs import configure_logging
from orchestrator.models import EFFORTS, FORMATS
from orchestrator.tracing import configure_tracing

CONTEXT_HELP = "a file (.md, .txt, .pdf, .html) or an http(s) URL every debater and judge reads; repeatable"
LOGGING_COMMANDS = ("serve", "worker")  # long-running: warnings on stderr are the operator's log


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="debate", description="Structured debates between LLMs, judged and logged.")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the log on stderr, debug detail included")
    # `-v` also after the command (`debate run TOPIC -v`); SUPPRESS keeps a `-v` given before it
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                         help="show the log on stderr, debug detail included")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, **kw: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[verbose], **kw)  # type: ignore[arg-type]

    run = command("run", help="run a debate in the terminal")
    run.add_argument("topic", metavar="TOPIC")
    # values stay text here: bots/commands.py checks them, with the same messages as in chat
    run.add_argument("--format", metavar="|".join(FORMATS))
    run.add_argument("--rounds", metavar="N")
    run.add_argument("--proposer", metavar="MODEL")
    run.add_argument("--challenger", metavar="MODEL")
    run.add_argument("--debaters", metavar="MODEL,MODEL,…")
    run.add_argument("--judge", metavar="MODEL")
    run.add_argument("--judges", metavar="MODEL,MODEL,…", help="a jury of 2 to 5 judges in place of one")
    run.add_argument("--effort", metavar="|".join(EFFORTS))
    run.add_argument("--json", action="store_true", help="print only the JSON export on stdout")
    run.add_argument("--interactive", action="store_true",
                     help="between rounds, read audience notes for the debaters from stdin")
    run.add_argument("--context", metavar="SOURCE", action="append", default=[], help=CONTEXT_HELP)

    go_on = command("continue", help="one more round of a finished debate, then a new verdict")
    go_on.add_argument("id", metavar="ID")
    go_on.add_argument("facts", metavar="FACTS", nargs="?", help="new facts for the debaters and the judge")
    go_on.add_argument("--json", action="store_true", help="print only the JSON export on stdout")
    go_on.add_argument("--context", metavar="SOURCE", action="append", default=[],
                       help="another source for the brief (the debate keeps the ones it has); repeatable")

    again = command("rematch", help="the same topic as a new debate, with other debaters or another format")
    again.add_argument("id", metavar="ID")
    again.add_argument("--debaters", metavar="MODEL,MODEL,…")
    again.add_argument("--format", metavar="|".join(FORMATS))
    again.add_argument("--judges", metavar="MODEL,MODEL,…", help="a jury of 2 to 5 judges in place of one")
    again.add_argument("--json", action="store_true", help="print only the JSON export on stdout")
    again.add_argument("--context", metavar="SOURCE", action="append", default=[],
                       help="another source for the brief (the rematch keeps the original's); repeatable")

    command("demo", help="run a sample debate with whatever provider is configured (none: a small local model)")

    serve = command("serve", help="run the Slack and/or Discord bots")
    serve.add_argument("--slack", action="store_true")
    serve.add_argument("--discord", action="store_true")
    serve.add_argument("--host", default="0.0.0.0")
    serve.add_argument("--port", type=int, default=3000)
    serve.add_argument("--front-only", action="store_true",
                       help="answer the platforms only; debates run in `debate worker` processes")
    serve.add_argument("--name", metavar="NAME",
                       help="this front's stable, unique name (default: the host's); two on one host need two names")
    add_metrics_options(serve)

    worker = command("worker", help="run debates for fronts started with `debate serve --front-only`")
    worker.add_argument("--name", metavar="NAME",
                        help="this worker's stable name (default: the host's); it resumes its own debates")
    worker.add_argument("--concurrency", type=int, metavar="N",
                        help="debates at once (default: DEBATE_MAX_CONCURRENT, at most 200)")
    worker.add_argument("--host", default="0.0.0.0", help="where GET /healthz listens (default 0.0.0.0)")
    worker.add_argument("--port", type=int, help="the /healthz port (default 3001, or the next free one "
                        "when another worker holds it; 0 picks any free one)")
    add_metrics_options(worker)

    history = command("history", help="recent debates")
    history.add_argument("--limit", type=int, default=20)
    history.add_argument("--json", action="store_true")

    show = command("show", help="one debate in full")
    show.add_argument("id", metavar="ID")
    show.add_argument("--json", action="store_true")
    show.add_argument("--no-sources-text", action="store_true", help="list the brief's sources without their text")

    search = command("search", help="full-text search over topics, turns and recommendations")
    search.add_argument("query", metavar="QUERY")
    search.add_argument("--limit", type=int, default=20)
    search.add_argument("--json", action="store_true")

    export = command("export", help="export a debate as markdown or JSON")
    export.add_argument("id", metavar="ID")
    export.add_argument("--format", choices=("md", "json"), required=True)
    export.add_argument("-o", "--output", metavar="FILE")
    export.add_argument("--no-sources-text", action="store_true", help="list the brief's sources without their text")

    page = command("link", help="print a debate page's link (needs DEBATE_PUBLIC_URL); --revoke: a new key")
    page.add_argument("id", metavar="ID")
    page.add_argument("--revoke", action="store_true", help="make every earlier link answer 404")

    migrate = command("migrate-log", help="copy the log into another SQLite file or Postgres database")
    migrate.add_argument("--to", required=True, metavar="URL",
                         help="a postgresql:// URL or a SQLite file path (the source is the configured log)")

    add_usage_parser(command("usage", help="spend and tokens of every model call in the log"))

    add_purge_parser(command("purge", help="delete debates from the log, whole, and a person's data on request"))
    add_audit_parser(command("audit", help="who changed what: config, stops, link revokes, purges, installs"))

    sync = command("discord-sync", help="register the Discord slash commands")
    sync.add_argument("--guild", type=int, metavar="ID")
    return parser


def add_metrics_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--metrics-port", type=int, metavar="P",
                         help="serve GET /metrics on a port of its own (then not on --port); unset: on --port, "
                         "to requests from this host only")
    command.add_argument("--metrics-host", default="127.0.0.1", metavar="H",
                         help="where --metrics-port listens (default 127.0.0.1; 0.0.0.0 for a scraper elsewhere)")


def _metrics_listener(args: argparse.Namespace) -> MetricsListener | None:
    from bots.serve import MetricsListener

    return MetricsListener(host=args.metrics_host, port=args.metrics_port) if args.metrics_port is not None else None


def _start_command(args: argparse.Namespace) -> StartDebate:
    try:
        return start_request(args.topic, format=args.format, rounds=args.rounds, debaters=args.debaters,
                             proposer=args.proposer, challenger=args.challenger, judge=args.judge, effort=args.effort,
                             judges=args.judges)
    except CommandError as exc:
        raise UsageError(str(exc)) from None


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    return await run_command(_start_command(args), settings, as_json=args.json,
                             interactive=args.interactive, context=args.context)


async def _demo(args: argparse.Namespace, settings: Settings) -> int:
    return await demo(args, settings, _run)


async def _with_core(settings: Settings, fn: Callable[[Core], Awaitable[int]]) -> int:
    """For the commands that only read: the log opened read-only, nothing recovered."""
    async with await Core.open(settings, role="read") as core:
        return await fn(core)


async def _history(args: argparse.Namespace, settings: Settings) -> int:
    async def go(core: Core) -> int:
        rows = await core.history(limit=max(1, min(args.limit, 500)))
        agreement = await core.judge_agreement()
        juries = await core.jury_figures()
        calibration = await core.calibration()
        if args.json:
            print(json.dumps({"debates": [r.model_dump(mode="json") for r in rows],
                              "teams_vs_judge": {**agreement.model_dump(mode="json"), "rate": agreement.rate},
                              "juries": {**juries.model_dump(mode="json"), "split_rate": juries.split_rate,
                                         "against_rate": juries.against_rate},
                              "calibration": calibration.as_json()},
                             indent=2))
        else:
            print(render_history(rows, agreement, juries, calibration))
        return EXIT_OK

    return await _with_core(settings, go)


async def _search(args: argparse.Namespace, settings: Settings) -> int:
    async def go(core: Core) -> int:
        hits = await core.search(args.query, limit=max(1, min(args.limit, 200)))
        print(json.dumps([h.model_dump(mode="json") for h in hits], indent=2) if args.json else render_hits(hits))
        return EXIT_OK

    return await _with_core(settings, go)


async def _show(args: argparse.Namespace, settings: Settings) -> int:
    async def go(core: Core) -> int:
        record = await load(core, args.id)
        if args.json:
            print(json.dumps(to_json(record, sources_text=not args.no_sources_text), ensure_ascii=False, indent=2))
        else:
            print(render_record(record, Style(sys.stdout)))
        return EXIT_OK

    return await _with_core(settings, go)


async def _export(args: argparse.Namespace, settings: Settings) -> int:
    async def go(core: Core) -> int:
        record = await load(core, args.id)
        text = (json.dumps(to_json(record, sources_text=not args.no_sources_text), ensure_ascii=False, indent=2)
                if args.format == "json"
                else to_markdown(record))
        if args.output:
            await asyncio.to_thread(Path(args.output).write_text, text + "\n", encoding="utf-8")
            print(f"wrote {args.output}", file=sys.stderr)
        else:
            print(text)
        return EXIT_OK

    return await _with_core(settings, go)


async def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from bots.serve import serve

    return await serve(settings, slack=args.slack, discord=args.discord, host=args.host, port=args.port,
                       front_only=args.front_only, name=args.name, metrics=_metrics_listener(args))


async def _worker(args: argparse.Namespace, settings: Settings) -> int:
    from bots.serve import work

    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError("--concurrency must be 1 or more")
    return await work(settings, name=args.name, concurrency=args.concurrency, host=args.host, port=args.port,
                      metrics=_metrics_listener(args))


async def _migrate_log(args: argparse.Namespace, settings: Settings) -> int:
    from orchestrator.log import migrate_log

    source = settings.debate_database_url or settings.debate_db
    try:
        copied = await migrate_log(source, args.to)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    print(f"copied {copied.text()}", file=sys.stderr)
    return EXIT_OK


async def _usage(args: argparse.Namespace, settings: Settings) -> int:
    try:
        since = since_of(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return await _with_core(settings, lambda core: usage_command(args, since, core))


async def _discord_sync(args: argparse.Namespace, settings: Settings) -> int:
    from bots.serve import discord_sync

    return await discord_sync(settings, guild=args.guild)


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], Awaitable[int]]] = {
    "run": _run,
    "continue": continue_debate,
    "rematch": rematch,
    "demo": _demo,
    "serve": _serve,
    "worker": _worker,
    "history": _history,
    "show": _show,
    "search": _search,
    "export": _export,
    "link": link,
    "discord-sync": _discord_sync,
    "migrate-log": _migrate_log,
    "usage": _usage,
    "purge": purge_command,
    "audit": audit_command,
}


def _configure_logging(args: argparse.Namespace, settings: Settings | None = None) -> None:
    """The terminal commands show their rendered output and one-line errors, never logger lines (what a
    user must know is rendered in words); `--verbose` shows the log on stderr. `serve` and `worker` log
    warnings there too: stderr is their log (INFO as well, one JSON object a line, with
    DEBATE_LOG_FORMAT=json). Called again once the settings are read, for their format and secrets."""
    command, verbose = args.command, args.verbose
    if not (verbose or command in LOGGING_COMMANDS):  # drop everything, logging's last resort included
        logging.basicConfig(level=logging.WARNING, handlers=[logging.NullHandler()])
        return
    fmt = settings.debate_log_format if settings is not None else "text"
    level = logging.DEBUG if verbose else logging.INFO if fmt == "json" else logging.WARNING
    role = "front" if getattr(args, "front_only", False) else command
    process = getattr(args, "name", None) or socket.gethostname()
    configure_logging(fmt, level, role=role, process=process, secrets=settings.secrets() if settings else ())


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(args)
    try:
        settings = load_settings()
        _configure_logging(args, settings)
        configure_tracing("front" if getattr(args, "front_only", False) else args.command)
        with asyncio.Runner(loop_factory=event_loop.use(settings.debate_event_loop)) as runner:
            return runner.run(COMMANDS[args.command](args, settings))
    except (ConfigError, UsageError) as exc:
        print(f"debate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as exc:  # the log could not be opened or written: one line, no traceback
        print(f"debate: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("debate: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
