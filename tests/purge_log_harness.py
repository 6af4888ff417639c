"""What test_purge_log.py shares with other test modules, moved here so that no test module imports another:
`NOON`, `PERSON`, `PERSON_NAME`, `debate`, `dump`, `figures`, `holding`, `rows_of`."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

from orchestrator.budgets import CallUsage
from orchestrator.log import DebateLog
from orchestrator.models import DebateSpec, Interjection, Outcome, Seat, Turn, Verdict, Vote
from orchestrator.quotas import Budget, Claim, Quota
from orchestrator.usage import standings, usage
from tests.log_backends import LogBackend

SEATS = (Seat(label="A", role="proposer", model="openai:gpt-5"),
         Seat(label="B", role="challenger", model="anthropic:claude-sonnet-4-5"))


NOON = datetime(2026, 3, 10, 12, 0, tzinfo=UTC).timestamp()


MONTH = datetime(2026, 3, 1, tzinfo=UTC).timestamp()


OPEN = Quota(max_running=100)


PERSON = "U0PURGEME7"


PERSON_NAME = "Zelda Quillfeather"


_n = itertools.count()


async def debate(store: DebateLog, user: str, at: float, *, workspace: str = "T1", word: str = "kafka",
                 finish: bool = True, turn_text: str | None = None, platform: str = "slack") -> str:
    """A debate with a turn, an unpriced turn, a judge call, a verdict, a vote, a note, a message and a page key."""
    s = DebateSpec(topic=f"Is {word} right for us?", seats=SEATS, judge="openai:gpt-5", platform=platform,
                   workspace=workspace, channel="C1", requested_by=user)
    await store.admit(s, OPEN, at=at)
    await store.add_turn(Turn(debate_id=s.id, round=1, seat="A", role="proposer", kind="opening",
                              model="openai:gpt-5", started_at=at, input_tokens=1000, output_tokens=2000,
                              text=turn_text or f"{word} has the throughput"))
    await store.add_turn(Turn(debate_id=s.id, round=1, seat="B", role="challenger", kind="opening",
                              model="ollama:unpriced-model", started_at=at + 5, input_tokens=300, output_tokens=400,
                              text=f"{word} costs too much"))
    await store.add_call(CallUsage(attempt=f"a{next(_n)}", debate_id=s.id, at=at + 10, purpose="judge",
                                   model="anthropic:claude-sonnet-4-5", input_tokens=5000, output_tokens=700))
    await store.record_vote(Vote(debate_id=s.id, user=f"V{next(_n)}", choice="agree", platform="slack"))
    await store.add_interjection(Interjection(debate_id=s.id, author="Some One", user=f"N{next(_n)}",
                                              platform="slack", text=f"think about {word} ops"), max_waiting=5)
    await store.set_message(s.id, "root", "slack", "C1", f"{next(_n)}.0001")
    await store.page_token(s.id)
    if finish:
        await store.set_verdict(s.id, Verdict(winner="A", recommendation=f"adopt {word}"), at=at + 20)
        await store.finish_debate(s.id, Outcome(status="completed", rounds_completed=1), at=at + 20)
    return s.id


def tables_with_debate_id(backend: LogBackend) -> list[str]:
    """Every table holding a `debate_id` column, as the database lists them (not as the code knows them)."""
    if backend.name == "sqlite":
        names = [r[0] for r in backend.sql("select name from sqlite_master where type = 'table'")]
        return [n for n in names if any(c[1] == "debate_id" for c in backend.sql(f"pragma table_info('{n}')"))]
    return [r[0] for r in backend.sql("select table_name from information_schema.columns where column_name ="
                                      " 'debate_id' and table_schema = current_schema()")]


def rows_of(backend: LogBackend, debate_id: str) -> dict[str, int]:
    found = {t: int(backend.sql(f"select count(*) from {t} where debate_id = ?", [debate_id])[0][0])
             for t in tables_with_debate_id(backend)}
    found["debates"] = int(backend.sql("select count(*) from debates where id = ?", [debate_id])[0][0])
    return found


async def figures(store: DebateLog) -> dict[str, Any]:
    """What `debate usage` shows every way, and a user's and an admin's standings against budgets."""
    calls = await store.spent_calls(MONTH)
    shown: dict[str, Any] = {by: usage(calls, MONTH, by).model_dump() for by in ("workspace", "user", "model", "day")}
    budget = Budget(per_workspace_day=100.0, per_user_day=50.0, per_month=1000.0)
    for user in ("U1", "U2", PERSON):
        claim = Claim(platform="slack", workspace="T1", channel="C1", user=user)
        shown[user] = [s.model_dump() for s in standings(calls, claim, budget, NOON + 3600, admin=False)]
    admin = Claim(platform="slack", workspace="T1", channel="C1", user="U1")
    shown["admin"] = [s.model_dump() for s in standings(calls, admin, budget, NOON + 3600, admin=True)]
    return _rounded(shown)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def every_table(backend: LogBackend) -> list[str]:
    """Every table of the log as the database lists it, the search index's own tables included."""
    if backend.name == "sqlite":
        return [r[0] for r in backend.sql("select name from sqlite_master where type = 'table'"
                                          " and sql not like 'create virtual table%'")]
    return [r[0] for r in backend.sql("select table_name from information_schema.tables where table_schema ="
                                      " current_schema() and table_type = 'BASE TABLE'")]


def dump(backend: LogBackend) -> dict[str, list[str]]:
    """Every row of every table, as text, sorted (a snapshot to compare)."""
    return {t: sorted(repr(r) for r in backend.sql(f"select * from {t}")) for t in every_table(backend)}


def holding(backend: LogBackend, needle: str) -> dict[str, int]:
    """Rows of each table (the audit trail aside) with `needle` anywhere in them."""
    found = {}
    for table in every_table(backend):
        if table == "audit":
            continue
        cast = "cast(t.* as text)" if backend.name == "postgres" else None
        if cast is None:
            columns = [c[1] for c in backend.sql(f"pragma table_info('{table}')")]
            cast = " || '|' || ".join(f"coalesce(cast(t.\"{c}\" as text), '')" for c in columns)
        n = int(backend.sql(f"select count(*) from {table} t where {cast} like ?", [f"%{needle}%"])[0][0])
        if n:
            found[table] = n
    return found
