"""What one debate left behind after a kill trial, read from the platform peers and the log (read-only).

Counted at the peers, by content (independent of the product's own bookkeeping):
- each logged turn's marker (bench.killscript) must be in exactly one platform message of its debate:
  none is a turn lost from the thread, two or more a duplicate (a second post, or a half-streamed
  message left behind next to a re-streamed one);
- each turn's header (seat, kind, round as the surfaces render it) must head exactly one message, which
  also catches a placeholder or half-streamed message that never got as far as the marker;
- one root message, and one verdict message (the one with the vote buttons) for a completed debate.
Counted in the log: every (round, seat, kind) the script produces for the format, once (`turns`); the
`messages` row of each turn's part 0 must point at the platform message that carries its marker.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.killscript import EXPECTED_TURNS, MARKER
from bench.served import LogSource, Peers, read_log
from orchestrator.durable.names import workflow_id
from tests.fakes.discord_api import CHANNEL_ID

SLACK_HEADER = re.compile(r"^\*([A-D]) · [\w-]+\* — ([\w -]+), round (\d+)")
DISCORD_HEADER = re.compile(r"^\*\*Round (\d+) · ([\w -]+)\*\*")
DISCORD_AUTHOR = re.compile(r"^([A-D]) · ")


@dataclass
class DebateCheck:
    """The findings for one debate; `problems` lists each failed expectation in one short line."""

    tag: int
    platform: str
    fmt: str
    debate_id: str | None = None
    status: str = "not started"
    turns_logged: int = 0
    lost_turns: int = 0  # expected turns missing from the log
    duplicate_turns: int = 0  # extra rows for one (round, seat, kind) in the log
    thread_missing: int = 0  # logged turns with no message at the platform
    thread_duplicates: int = 0  # extra platform messages for one turn, root or verdict
    verdicts: int = 0
    roots: int = 0
    key_mismatches: int = 0
    workflow: str | None = None  # Postgres: the debate's workflow status in DBOS's tables
    recoveries: int = 0  # Postgres: times DBOS recovered that workflow (a killed worker's restart)
    problems: list[str] = field(default_factory=list)

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @property
    def clean(self) -> bool:
        return not self.problems


def _slack_messages(peers: Peers, channel: str) -> list[tuple[str, str, bool, str | None]]:
    """(message id, searchable text, is a verdict, header key) for every message in a Slack channel."""
    out = []
    for message in peers.slack.messages.values():
        if message.channel != channel:
            continue
        blob = message.text + json.dumps(message.blocks or [])
        verdict = bool(message.thread_ts) and any(b.get("type") == "actions" for b in message.blocks or [])
        header = SLACK_HEADER.match(message.text)
        key = f"{header.group(3)}:{header.group(1)}:{_kind(header.group(2))}" if header else None
        out.append((message.ts, blob, verdict, key if message.thread_ts else "root"))
    return out


def _discord_messages(peers: Peers, debate_id: str | None, thread: str | None,
                      tag: int) -> list[tuple[str, str, bool, str | None]]:
    """The same for Discord: the root in the parent channel, then every thread of the debate (the one the
    log names, and any other holding one of its markers)."""
    out = []
    threads = {thread} if thread else set()
    for message in peers.discord.messages.values():
        found = MARKER.search(json.dumps(message))
        if found and int(found.group(1)) == tag and message["channel_id"] != CHANNEL_ID:
            threads.add(message["channel_id"])
    for message in peers.discord.messages.values():
        blob = json.dumps(message)
        if message["channel_id"] == CHANNEL_ID:
            if debate_id and f"Debate {debate_id} " in blob:
                out.append((message["id"], blob, False, "root"))
            continue
        if message["channel_id"] not in threads:
            continue
        key = None
        for embed in message.get("embeds") or []:
            author = DISCORD_AUTHOR.match((embed.get("author") or {}).get("name", ""))
            header = DISCORD_HEADER.match(embed.get("description") or "")
            if author and header:
                key = f"{header.group(1)}:{author.group(1)}:{_kind(header.group(2))}"
        out.append((message["id"], blob, bool(message.get("components")), key))
    return out


def _kind(text: str) -> str:
    return text.strip().replace(" ", "-")


def check_debate(peers: Peers, db: LogSource, tag: int, platform: str, fmt: str, rounds: int,
                 channel: str) -> DebateCheck:
    result = DebateCheck(tag, platform, fmt)
    rows = read_log(db, "select id, status, thread from debates where topic like ?", (f"kill debate {tag:04d}:%",))
    if len(rows) != 1:
        result.problems.append(f"{len(rows)} debates logged for this request")
        if not rows:
            return result
    debate = rows[0]
    result.debate_id, result.status = debate["id"], debate["status"]
    if not result.completed:
        result.problems.append(f"ended {result.status}")

    turns = read_log(db, "select round, seat, kind, status, text from turns where debate_id = ?", (debate["id"],))
    result.turns_logged = len(turns)
    counts = Counter((t["round"], t["seat"], t["kind"]) for t in turns if t["status"] == "ok")
    expected = EXPECTED_TURNS.get(f"{fmt}-{rounds}") or EXPECTED_TURNS.get(fmt)
    if expected is not None:
        result.lost_turns = len(expected - set(counts))
        if result.lost_turns:
            result.problems.append(f"{result.lost_turns} turn(s) missing from the log")
    result.duplicate_turns = sum(n - 1 for n in counts.values() if n > 1)
    if result.duplicate_turns:
        result.problems.append(f"{result.duplicate_turns} duplicated turn row(s) in the log")

    messages = (_slack_messages(peers, channel) if platform == "slack"
                else _discord_messages(peers, debate["id"], debate["thread"], tag))
    keys = {r["key"]: r["message_id"] for r in read_log(
        db, "select key, message_id from messages where debate_id = ?", (debate["id"],))}
    headers = Counter(m[3] for m in messages if m[3])
    for turn in turns:
        if turn["status"] != "ok":
            continue
        found = MARKER.search(turn["text"] or "")
        if found is None:
            result.problems.append(f"turn {turn['round']}:{turn['seat']}:{turn['kind']} has no marker")
            continue
        holders = [m[0] for m in messages if found.group(0) in m[1]]
        header_count = headers.get(f"{turn['round']}:{turn['seat']}:{turn['kind']}", 0)
        shown = max(len(holders), header_count)
        if not holders:
            result.thread_missing += 1
        if shown > 1:
            result.thread_duplicates += shown - 1
        recorded = keys.get(f"turn:{turn['round']}:{turn['seat']}:{turn['kind']}:0")
        if holders and recorded not in holders:
            result.key_mismatches += 1
    result.roots = headers.get("root", 0)
    result.verdicts = sum(1 for m in messages if m[2])
    extra = max(0, result.roots - 1) + max(0, result.verdicts - 1)
    result.thread_duplicates += extra
    if result.thread_missing:
        result.problems.append(f"{result.thread_missing} logged turn(s) not in the thread")
    if result.thread_duplicates:
        result.problems.append(f"{result.thread_duplicates} duplicate message(s) in the thread")
    if result.roots == 0:
        result.problems.append("no root message")
    if result.completed and result.verdicts == 0:
        result.problems.append("no verdict message")
    if result.key_mismatches:
        result.problems.append(f"{result.key_mismatches} turn key(s) recorded for the wrong message")
    return result


def check_workflow(db: LogSource, result: DebateCheck) -> None:
    """On Postgres (a URL): the debate has one workflow in DBOS's schema, and it ended SUCCESS."""
    if not isinstance(db, str) or result.debate_id is None:
        return
    rows = read_log(db, "select status, recovery_attempts from dbos.workflow_status where workflow_uuid = ?",
                    (workflow_id(result.debate_id),))
    if not rows:
        result.problems.append("no workflow in the workflow database")
        return
    result.workflow = rows[0]["status"]
    result.recoveries = max(0, int(rows[0]["recovery_attempts"] or 0) - 1)
    if result.workflow != "SUCCESS":
        result.problems.append(f"workflow ended {result.workflow}")


def summarize(checks: list[DebateCheck]) -> dict[str, Any]:
    return {
        "debates": len(checks),
        "completed": sum(c.completed for c in checks),
        "clean": sum(c.clean for c in checks),
        "lost_turns": sum(c.lost_turns + c.thread_missing for c in checks),
        "duplicates": sum(c.duplicate_turns + c.thread_duplicates for c in checks),
    }
