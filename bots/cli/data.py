"""`debate purge` and `debate audit`: the operator's deletion of data and the trail of who changed what.

`purge` deletes whole debates (by id, by who started them, by workspace, by date; the conditions given all
hold), each in one transaction, then the workflow engine's records of them (orchestrator/purge.py); with
`--user` it also removes that person from every debate that stays. `--dry-run` prints what would go and
changes nothing. `audit` only reads.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime

from bots.cli.running import EXIT_OK, UsageError
from orchestrator.config import Settings
from orchestrator.log import AmbiguousIdError, DebateLog, open_log
from orchestrator.log.audit import AuditEntry
from orchestrator.log.purge import PurgeSelection, purged_text
from orchestrator.purge import PurgeReport, purge
from orchestrator.usage import parse_since

NOTHING_SELECTED = "say what to purge: --debate ID, --user U, --workspace T and/or --before DATE"


def add_purge_parser(command: argparse.ArgumentParser) -> None:
    command.add_argument("--debate", metavar="ID", help="one debate (its id, or its first few characters)")
    command.add_argument("--user", metavar="U", help="a platform user id: the debates they started, and their "
                         "votes, notes, id and name everywhere else")
    command.add_argument("--workspace", metavar="T", help="a Slack team or Discord guild id")
    command.add_argument("--before", metavar="DATE", help="debates that ended (or, running, began) before this "
                         "UTC date or time (2026-03-01, 2026-03-01T12:00)")
    command.add_argument("--dry-run", action="store_true", help="print what would go; change nothing")
    command.add_argument("--json", action="store_true", help="print the report as one JSON document")


def add_audit_parser(command: argparse.ArgumentParser) -> None:
    command.add_argument("--since", default="7d", help="a span back from now (7d, 24h, 30m, 2w) or a UTC date "
                         "(2026-03-01); default 7d")
    command.add_argument("--json", action="store_true")


def _before(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--before takes a UTC date such as 2026-03-01 (or 2026-03-01T12:00), not {text!r}") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


async def _debate_id(store: DebateLog, given: str) -> str:
    try:
        record = await store.get_debate(given.strip(), turns=False)
    except AmbiguousIdError as exc:
        raise UsageError(str(exc)) from None
    if record is not None:
        return record.id
    tomb = await store.purged(given.strip())
    if tomb is not None:
        raise UsageError(purged_text(tomb))
    raise UsageError(f"no debate with id {given!r}; `debate history` lists them")


def _when(at: object) -> str:
    return datetime.fromtimestamp(float(at), UTC).strftime("%Y-%m-%d %H:%M UTC")  # type: ignore[arg-type]


def render_report(report: PurgeReport) -> str:
    totals = report.totals
    kinds = ", ".join(f"{n} {kind}" for kind, n in totals.items() if kind != "debates")
    head = "Would purge" if report.dry_run else "Purged"
    count = len(report.debates) if report.dry_run else len(report.purged)
    lines = [f"{head} {count} debate{'s' if count != 1 else ''}" + (f" ({kinds})" if kinds and count else "") + "."]
    lines += [f"  {t.id}  {t.status:<9}  {t.platform or 'cli'}:{t.workspace or '-'}" for t in report.debates]
    if report.stopped:
        lines.append(f"Stopped first (they were running): {', '.join(report.stopped)}.")
    if report.user is not None:
        if report.dry_run:
            lines.append(f"{report.user}'s votes and notes in every other debate would be deleted, and their id and "
                         "name replaced where they appear.")
        elif report.forgotten is not None:
            f = report.forgotten
            lines.append(f"{report.user} removed from {len(f.debates)} other debates: {f.votes} votes and {f.notes} "
                         f"notes deleted, {f.replaced} mentions replaced.")
    return "\n".join(lines)


async def purge_command(args: argparse.Namespace, settings: Settings) -> int:
    selection = PurgeSelection(user=args.user, workspace=args.workspace, before=_before(args.before))
    if selection.empty and args.debate is None:
        raise UsageError(NOTHING_SELECTED)
    async with open_log(settings.debate_database_url or settings.debate_db) as store:
        if args.debate is not None:
            selection = selection.model_copy(update={"debate": await _debate_id(store, args.debate)})
        if args.dry_run:
            report = await purge(store, selection, dry_run=True)
        else:
            report = await _purge_with_engine(store, selection, settings)
    print(report.model_dump_json(indent=2) if args.json else render_report(report))
    return EXIT_OK


async def _purge_with_engine(store: DebateLog, selection: PurgeSelection, settings: Settings) -> PurgeReport:
    """The workflow engine's records go too, when it has a database (no SQLite file: no debate ever ran there).
    DBOS is imported here, not with the CLI: it takes half a second, which every other command would wait."""
    from orchestrator.durable.config import sqlite_path, system_db_url

    url = system_db_url(settings)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return await purge(store, selection)
    from orchestrator.durable import FrontFeed
    from orchestrator.durable.purge_records import ClientRecords

    feed = await FrontFeed.open(settings)
    try:
        return await purge(store, selection, engine=ClientRecords(feed.client))
    finally:
        await feed.close()


def render_audit(entries: list[AuditEntry], since: float) -> str:
    if not entries:
        return f"Nothing in the audit trail since {_when(since)}."
    width = max(len(e.who) for e in entries)
    rows = [f"{_when(e.at)}  {e.who:<{width}}  {e.action:<11}  {e.target}" + (f"  ({e.detail})" if e.detail else "")
            for e in entries]
    return "\n".join([f"Audit trail since {_when(since)}, newest first:", *rows])


async def audit_command(args: argparse.Namespace, settings: Settings) -> int:
    try:
        since = parse_since(args.since, time.time())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    async with open_log(settings.debate_database_url or settings.debate_db, readonly=True) as store:
        entries = await store.audit(since)
    if args.json:
        print(json.dumps({"since": since, "entries": [e.model_dump(mode="json") | {"who": e.who} for e in entries]},
                         indent=2))
    else:
        print(render_audit(entries, since))
    sys.stdout.flush()
    return EXIT_OK
