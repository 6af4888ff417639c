"""What test_metrics.py shares with other test modules, moved here so that no test module imports another:
`CHALLENGE`, `completed`, `debate_rows`."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from tests.fakes.slack_api import SlackAPIPeer
from tests.serve_harness import slack_verdict_posted

CHALLENGE = "You are the challenger."


def debate_rows(db: Path) -> list[sqlite3.Row]:
    with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute("select * from debates").fetchall()


async def completed(db: Path, slack: SlackAPIPeer) -> None:
    await slack.wait_for(lambda _: [r["status"] for r in debate_rows(db)] not in ([], ["running"]), within=90)
    assert [(r["status"], r["error"]) for r in debate_rows(db)] == [("completed", None)]
    await slack.wait_for(slack_verdict_posted, within=30)
    # the root's last edit says how the debate ended: after it, the front writes nothing more
    await slack.wait_for(lambda p: any(m.thread_ts is None and "(completed)" in m.text for m in p.messages.values()),
                         within=30)
