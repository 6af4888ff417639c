"""The debate log: one SQLite file, one writer thread, full-text recall, votes.

A `sqlite_utils.Database` works only in the thread that created it, so the store owns one
dedicated thread that opens the file, runs the migrations and then executes work sent to it as
plain `fn(db)` callables (Datasette's write-thread pattern). Each callable runs in its own
transaction; its result or exception comes back to the awaiting coroutine through
`loop.call_soon_threadsafe`, so the event loop never blocks on SQLite. Reads go through the same
thread: a read is a few indexed lookups, and one connection means every read sees every write
that was awaited before it.

Timestamps are ISO-8601 UTC text in the file (readable in Datasette) and float epoch seconds in
the models; `to_iso` / `from_iso` convert at this boundary.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from sqlite_utils import Database
from sqlite_utils.db import Table

from orchestrator.migrations import migrations
from orchestrator.models import (
    DebateSpec,
    DebateStatus,
    Outcome,
    Seat,
    Turn,
    Verdict,
    Vote,
    now,
)
from orchestrator.pricing import estimate_cost

log = logging.getLogger(__name__)

T = TypeVar("T")
Redactor = Callable[[str], str]

BUSY_TIMEOUT_MS = 5000
MIN_ID_PREFIX = 4
SNIPPET_TOKENS = 16
RECOMMENDATION_SNIPPET_CHARS = 200
# Search ranks, per FTS table, only this many of a query's newest matches (see `Store.search`).
SEARCH_RECENT_MATCHES = 1_000
# Candidate rows ranked per wanted hit: a debate has several turns, `limit` debates need more rows.
SEARCH_CANDIDATES_PER_HIT = 5
INTERRUPTED_ERROR = "interrupted by a restart"
HitWhere = Literal["topic", "turn", "recommendation"]


# ---------------------------------------------------------------------------------------------
# errors


class StoreError(Exception):
    """A log operation failed in a way the caller can explain to a user."""


class StoreClosedError(StoreError):
    def __init__(self) -> None:
        super().__init__("the debate log is not open; call `await store.start()` first")


class DebateNotFoundError(StoreError):
    def __init__(self, debate_id: str) -> None:
        super().__init__(f"no debate with id {debate_id!r}")
        self.debate_id = debate_id


class AmbiguousIdError(StoreError):
    """A short id matched more than one debate; the message lists them."""

    def __init__(self, prefix: str, matches: list[str]) -> None:
        shown = ", ".join(matches[:5]) + (" …" if len(matches) > 5 else "")
        super().__init__(f"{prefix!r} matches {len(matches)} debates ({shown}); type more of the id")
        self.prefix = prefix
        self.matches = matches


# ---------------------------------------------------------------------------------------------
# what the store hands back


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Tally(_Record):
    """Votes on one debate: how many users chose each choice, and how many voted at all."""

    debate_id: str
    counts: dict[str, int] = Field(default_factory=dict)
    total: int = 0

    def count(self, choice: str) -> int:
        return self.counts.get(choice, 0)


class TurnRecord(Turn):
    """A stored turn: the engine's Turn plus its row id (the FTS rowid) and estimated cost."""

    id: int
    cost_usd: float | None = None


class NoticeRecord(_Record):
    at: float
    level: str
    text: str


class TokenTotals(_Record):
    debate_id: str
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None when any turn used a model with an unknown price


class DebateRecord(_Record):
    """Everything the log knows about one debate."""

    id: str
    topic: str
    format: str
    status: DebateStatus
    created_at: float
    finished_at: float | None = None
    platform: str | None = None
    channel: str | None = None
    thread: str | None = None
    requested_by: str | None = None
    rounds_planned: int = 0
    rounds_completed: int = 0
    effort: str | None = None
    judge: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    error: str | None = None
    warnings: tuple[str, ...] = ()
    spec: DebateSpec | None = None
    seats: tuple[Seat, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    verdict: Verdict | None = None
    notices: tuple[NoticeRecord, ...] = ()
    tally: Tally

    def seat(self, label: str) -> Seat | None:
        return next((s for s in self.seats if s.label == label), None)


class DebateSummary(_Record):
    """One line of `debate history`."""

    id: str
    topic: str
    format: str
    status: DebateStatus
    created_at: float
    finished_at: float | None = None
    platform: str | None = None
    channel: str | None = None
    thread: str | None = None
    requested_by: str | None = None
    rounds_planned: int = 0
    rounds_completed: int = 0
    winner: str | None = None  # seat label
    winner_model: str | None = None
    split: bool = False
    recommendation: str | None = None  # at most RECOMMENDATION_SNIPPET_CHARS characters
    votes: int = 0
    cost_usd: float | None = None
    error: str | None = None


class SearchHit(_Record):
    """A debate that matched a search, at its best-ranked place."""

    debate_id: str
    topic: str
    where: HitWhere  # "recommendation" covers the verdict's recommendation and reasoning
    snippet: str  # the match between [ and ]
    created_at: float
    status: DebateStatus
    rank: float  # bm25: lower is better


# ---------------------------------------------------------------------------------------------
# time at the boundary


def to_iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")


def from_iso(text: str | None) -> float | None:
    if not text:
        return None
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


# ---------------------------------------------------------------------------------------------
# the writer thread


@dataclass(slots=True)
class _Job:
    fn: Callable[[Database], Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    write: bool


@dataclass(slots=True)
class _Stop:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting coroutine was cancelled; the work still happened
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _hand_back(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any, error: BaseException | None
) -> None:
    try:
        loop.call_soon_threadsafe(_settle, future, result, error)
    except RuntimeError:  # the loop closed while the job ran; nobody is waiting any more
        log.debug("store result dropped: event loop closed")


def open_database(path: Path) -> Database:
    """Open the file with the pragmas the log relies on and bring the schema up to date."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
    db = Database(conn)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA synchronous=NORMAL")
    migrations.apply(db)
    return db


def _run_in_transaction(db: Database, fn: Callable[[Database], T], write: bool) -> T:
    conn = db.conn
    # IMMEDIATE takes the write lock up front, so another process's writer makes us wait on
    # busy_timeout instead of failing with SQLITE_BUSY when a read turns into a write.
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        result = fn(db)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if conn.in_transaction:
        conn.execute("COMMIT")
    return result


class Store:
    """The SQLite debate log. `async with Store(path) as store:` or `start()` / `close()`."""

    def __init__(self, path: str | Path, *, redact: Redactor | None = None) -> None:
        self.path = Path(path)
        self._redact: Redactor = redact or (lambda text: text)
        self._queue: queue.SimpleQueue[_Job | _Stop] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the file in the writer thread, set WAL, run pending migrations."""
        if self._thread is not None:
            return
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        thread = threading.Thread(target=self._serve, args=(loop, ready), name=f"store:{self.path.name}", daemon=True)
        thread.start()
        try:
            await ready
        except BaseException:
            await asyncio.to_thread(thread.join)
            raise
        self._thread = thread

    async def close(self) -> None:
        """Finish every queued job, then close the connection (checkpointing the WAL)."""
        thread = self._thread
        if thread is None:
            return
        self._thread = None
        loop = asyncio.get_running_loop()
        stopped: asyncio.Future[None] = loop.create_future()
        self._queue.put(_Stop(loop, stopped))
        await stopped
        await asyncio.to_thread(thread.join)

    async def __aenter__(self) -> Store:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def is_open(self) -> bool:
        return self._thread is not None

    def _serve(self, loop: asyncio.AbstractEventLoop, ready: asyncio.Future[None]) -> None:
        try:
            db = open_database(self.path)
        except sqlite3.Error as error:  # hand the failure to start(); the thread ends
            message = f"cannot open the debate log at {self.path}: {error} (check DEBATE_DB)"
            _hand_back(loop, ready, None, StoreError(message))
            return
        except BaseException as error:
            _hand_back(loop, ready, None, error)
            return
        _hand_back(loop, ready, None, None)
        while True:
            job = self._queue.get()
            if isinstance(job, _Stop):
                try:
                    db.execute("PRAGMA optimize")
                    db.close()
                except sqlite3.Error as error:
                    _hand_back(job.loop, job.future, None, error)
                    return
                _hand_back(job.loop, job.future, None, None)
                return
            try:
                result = _run_in_transaction(db, job.fn, job.write)
            except BaseException as error:
                _hand_back(job.loop, job.future, None, error)
            else:
                _hand_back(job.loop, job.future, result, None)

    async def _submit(self, fn: Callable[[Database], T], *, write: bool) -> T:
        if self._thread is None:
            raise StoreClosedError()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put(_Job(fn, loop, future, write))
        return await future

    async def write(self, fn: Callable[[Database], T]) -> T:
        """Run `fn(db)` in the writer thread inside one IMMEDIATE transaction."""
        return await self._submit(fn, write=True)

    async def read(self, fn: Callable[[Database], T]) -> T:
        """Run `fn(db)` in the writer thread inside one read transaction (a consistent snapshot)."""
        return await self._submit(fn, write=False)

    # -- writes ---------------------------------------------------------------------------------

    async def create_debate(self, spec: DebateSpec, *, at: float | None = None) -> None:
        """Insert the debate (status "running") and its seats. Re-creating the same id is a no-op."""
        created = to_iso(at if at is not None else now())
        spec = DebateSpec.model_validate(self._redact_value(spec.model_dump(mode="json")))

        def fn(db: Database) -> None:
            if _table(db, "debates").count_where("id = ?", [spec.id]):
                return
            _table(db, "debates").insert(
                {
                    "id": spec.id,
                    "topic": spec.topic,
                    "format": spec.format,
                    "status": "running",
                    "created_at": created,
                    "platform": spec.platform,
                    "channel": spec.channel,
                    "thread": spec.thread,
                    "requested_by": spec.requested_by,
                    "rounds_planned": spec.rounds,
                    "rounds_completed": 0,
                    "effort": spec.effort,
                    "judge": spec.judge,
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "warnings": "[]",
                    "spec": spec.model_dump_json(),
                }
            )
            _table(db, "seats").insert_all(
                {
                    "debate_id": spec.id,
                    "label": seat.label,
                    "role": seat.role,
                    "provider": seat.provider,
                    "model": seat.model,
                    "position": position,
                }
                for position, seat in enumerate(spec.seats)
            )

        await self.write(fn)

    async def add_turn(self, turn: Turn) -> int:
        """Log one turn (ok, failed or empty); returns its row id."""
        row = {
            "debate_id": turn.debate_id,
            "round": turn.round,
            "seat": turn.seat,
            "role": turn.role,
            "kind": turn.kind,
            "model": turn.model,
            "text": self._redact(turn.text),
            "started_at": to_iso(turn.started_at),
            "duration_ms": turn.duration_ms,
            "input_tokens": turn.input_tokens,
            "output_tokens": turn.output_tokens,
            "cost_usd": estimate_cost(turn.model, turn.input_tokens, turn.output_tokens),
            "status": turn.status,
            "error": self._redact(turn.error) if turn.error else None,
        }

        def fn(db: Database) -> int:
            _require_debate(db, turn.debate_id)
            table = _table(db, "turns").insert(row)
            assert table.last_rowid is not None
            return table.last_rowid

        return await self.write(fn)

    async def add_notice(self, debate_id: str, level: str, text: str, *, at: float | None = None) -> None:
        row = {
            "debate_id": debate_id,
            "at": to_iso(at if at is not None else now()),
            "level": level,
            "text": self._redact(text),
        }

        def fn(db: Database) -> None:
            _require_debate(db, debate_id)
            _table(db, "notices").insert(row)

        await self.write(fn)

    async def set_verdict(self, debate_id: str, verdict: Verdict, *, at: float | None = None) -> None:
        """Store the verdict; a later verdict for the same debate replaces it."""
        verdict = Verdict.model_validate(self._redact_value(verdict.model_dump(mode="json")))
        row = {
            "debate_id": debate_id,
            "winner": verdict.winner,
            "split": int(verdict.split),
            "reasoning": verdict.reasoning,
            "recommendation": verdict.recommendation,
            "consensus": verdict.consensus,
            "json": verdict.model_dump_json(),
            "at": to_iso(at if at is not None else now()),
        }

        def fn(db: Database) -> None:
            _require_debate(db, debate_id)
            # upsert is INSERT … ON CONFLICT DO UPDATE: the rowid, and so the FTS entry, survives
            _table(db, "verdicts").upsert(row, pk="debate_id")

        await self.write(fn)

    async def finish_debate(self, debate_id: str, outcome: Outcome, *, at: float | None = None) -> None:
        """Record how the debate ended. Tokens and cost fall back to the sum over its turns."""
        finished = to_iso(at if at is not None else now())
        warnings = [self._redact(w) for w in outcome.warnings]
        error = self._redact(outcome.error) if outcome.error else None

        def fn(db: Database) -> None:
            _require_debate(db, debate_id)
            totals = _token_totals(db, debate_id)
            updates: dict[str, Any] = {
                "status": outcome.status,
                "finished_at": finished,
                "rounds_completed": outcome.rounds_completed,
                "input_tokens": outcome.input_tokens or totals.input_tokens,
                "output_tokens": outcome.output_tokens or totals.output_tokens,
                "cost_usd": outcome.cost_usd if outcome.cost_usd is not None else totals.cost_usd,
                "warnings": json.dumps(warnings),
                "error": error,
            }
            if outcome.rounds_planned:
                updates["rounds_planned"] = outcome.rounds_planned
            _table(db, "debates").update(debate_id, updates)

        await self.write(fn)

    async def record_vote(self, vote: Vote) -> Tally:
        """One vote per user and debate: voting again changes the choice. Returns the new tally."""
        row = {
            "debate_id": vote.debate_id,
            "user": vote.user,
            "choice": vote.choice,
            "platform": vote.platform,
            "at": to_iso(vote.at),
        }

        def fn(db: Database) -> Tally:
            _require_debate(db, vote.debate_id)
            _table(db, "votes").upsert(row, pk=("debate_id", "user"))
            return _tally(db, vote.debate_id)

        return await self.write(fn)

    async def set_message(self, debate_id: str, key: str, platform: str, channel: str | None, message_id: str) -> None:
        """Remember which platform message `key` (e.g. "root", "turn:2:B") became."""
        row = {
            "debate_id": debate_id,
            "key": key,
            "platform": platform,
            "channel": channel,
            "message_id": message_id,
        }

        def fn(db: Database) -> None:
            _table(db, "messages").upsert(row, pk=("debate_id", "key"))

        await self.write(fn)

    async def claim_request(self, key: str, *, keep_s: float = 86_400.0) -> bool:
        """True the first time `key` (a platform's request id) is claimed; False for any repeat.
        Keys older than `keep_s` are forgotten, so the table stays small."""
        now = time.time()

        def fn(db: Database) -> bool:
            db.execute("delete from request_keys where at < ?", [to_iso(now - keep_s)])
            cursor = db.execute("insert or ignore into request_keys (key, at) values (?, ?)", [key, to_iso(now)])
            return cursor.rowcount == 1

        return await self.write(fn)

    async def mark_interrupted(self) -> list[str]:
        """Fail every debate still "running" (a restart killed it); returns their ids."""
        finished = to_iso(now())

        def fn(db: Database) -> list[str]:
            ids = [r[0] for r in db.execute("select id from debates where status = 'running'").fetchall()]
            db.execute(
                "update debates set status = 'failed', error = ?, finished_at = ? where status = 'running'",
                [INTERRUPTED_ERROR, finished],
            )
            return ids

        return await self.write(fn)

    async def vacuum(self) -> None:
        """VACUUM, then rebuild the FTS indexes (VACUUM may renumber implicit rowids)."""

        def fn(db: Database) -> None:
            db.conn.execute("VACUUM")
            for name in ("debates", "turns", "verdicts"):
                _table(db, name).rebuild_fts()

        await self._submit(_outside_transaction(fn), write=False)

    # -- reads ----------------------------------------------------------------------------------

    async def get_message(self, debate_id: str, key: str) -> str | None:
        def fn(db: Database) -> str | None:
            row = db.execute(
                "select message_id from messages where debate_id = ? and key = ?", [debate_id, key]
            ).fetchone()
            return row[0] if row else None

        return await self.read(fn)

    async def tally(self, debate_id: str) -> Tally:
        return await self.read(lambda db: _tally(db, debate_id))

    async def token_totals(self, debate_id: str) -> TokenTotals:
        return await self.read(lambda db: _token_totals(db, debate_id))

    async def resolve_id(self, id_or_prefix: str) -> str | None:
        """The full id for an id or a unique prefix of at least 4 characters.

        None when nothing matches; AmbiguousIdError when the prefix matches several debates.
        """
        return await self.read(lambda db: _resolve_id(db, id_or_prefix))

    async def get_debate(self, id_or_prefix: str) -> DebateRecord | None:
        """Everything about one debate, by id or unique prefix (>= 4 chars); None if unknown.

        Raises AmbiguousIdError when a prefix matches more than one debate.
        """

        def fn(db: Database) -> DebateRecord | None:
            debate_id = _resolve_id(db, id_or_prefix)
            return None if debate_id is None else _load_record(db, debate_id)

        return await self.read(fn)

    async def history(
        self, limit: int = 20, platform: str | None = None, channel: str | None = None
    ) -> list[DebateSummary]:
        """Newest first, optionally for one platform and channel."""
        wheres, args = [], []
        if platform is not None:
            wheres.append("d.platform = ?")
            args.append(platform)
        if channel is not None:
            wheres.append("d.channel = ?")
            args.append(channel)
        where = f"where {' and '.join(wheres)}" if wheres else ""
        sql = f"""
            select d.*, v.winner as v_winner, v.split as v_split, v.recommendation as v_recommendation,
                   (select count(*) from votes where votes.debate_id = d.id) as v_votes,
                   (select model from seats s where s.debate_id = d.id and s.label = v.winner) as v_model
            from debates d left join verdicts v on v.debate_id = d.id
            {where}
            order by d.created_at desc, d.rowid desc
            limit ?
        """
        args.append(max(0, limit))
        return await self.read(lambda db: [_summary(row) for row in _dict_rows(db, sql, args)])

    async def interrupted(self) -> list[DebateSummary]:
        """Debates still marked "running": on start-up these were cut off by a restart."""
        sql = """
            select d.*, null as v_winner, 0 as v_split, null as v_recommendation, 0 as v_votes,
                   null as v_model
            from debates d where d.status = 'running' order by d.created_at desc, d.rowid desc
        """
        return await self.read(lambda db: [_summary(row) for row in _dict_rows(db, sql, [])])

    async def latest_running(self) -> DebateSummary | None:
        running = await self.interrupted()
        return running[0] if running else None

    async def search(self, query: str, limit: int = 20) -> list[SearchHit]:
        """Full-text search over topics, turns and verdicts, best bm25 first, one hit per debate.

        User text is always quoted (every token becomes a literal phrase), so FTS syntax in the
        query — `AND (cats`, `"`, `*`, `NEAR(` — is searched for, never interpreted.

        Ranking trade-off: bm25 costs time per matching row, so in each FTS table only the
        newest `SEARCH_RECENT_MATCHES` matches compete (FTS5 walks its index newest-first and
        stops there). A query with fewer matches than that — rare words, most multi-word
        queries — is ranked over the whole log; a very common one returns the best among its
        recent matches, not the best of all time. Scores stay comparable either way (bm25's
        IDF counts every match). Ties go to the newer row; snippets are built for the final
        hits only.
        """
        if not query.strip() or limit <= 0:
            return []
        return await self.read(lambda db: _search(db, query, limit))

    # -- helpers --------------------------------------------------------------------------------

    def _redact_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._redact(value)
        if isinstance(value, list):
            return [self._redact_value(v) for v in value]
        if isinstance(value, dict):
            return {k: self._redact_value(v) for k, v in value.items()}
        return value


# ---------------------------------------------------------------------------------------------
# functions that run in the writer thread


def _table(db: Database, name: str) -> Table:
    table = db[name]
    assert isinstance(table, Table)
    return table


def _outside_transaction(fn: Callable[[Database], T]) -> Callable[[Database], T]:
    """Wrap `fn` so it commits the transaction the writer opened and runs with none open."""

    def run(db: Database) -> T:
        if db.conn.in_transaction:
            db.conn.execute("COMMIT")
        return fn(db)

    return run


def _require_debate(db: Database, debate_id: str) -> None:
    if db.execute("select 1 from debates where id = ?", [debate_id]).fetchone() is None:
        raise DebateNotFoundError(debate_id)


def _dict_rows(db: Database, sql: str, args: list[Any] | dict[str, Any]) -> list[dict[str, Any]]:
    cursor = db.execute(sql, args)
    names = [c[0] for c in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _tally(db: Database, debate_id: str) -> Tally:
    rows = db.execute(
        "select choice, count(*) from votes where debate_id = ? group by choice order by choice",
        [debate_id],
    ).fetchall()
    counts = {choice: n for choice, n in rows}
    return Tally(debate_id=debate_id, counts=counts, total=sum(counts.values()))


def _token_totals(db: Database, debate_id: str) -> TokenTotals:
    rows = db.execute(
        "select model, input_tokens, output_tokens from turns where debate_id = ?", [debate_id]
    ).fetchall()
    cost: float | None = 0.0
    for model, input_tokens, output_tokens in rows:
        turn_cost = estimate_cost(model or "", input_tokens or 0, output_tokens or 0)
        if turn_cost is None:
            if input_tokens or output_tokens:
                cost = None
        elif cost is not None:
            cost += turn_cost
    return TokenTotals(
        debate_id=debate_id,
        turns=len(rows),
        input_tokens=sum(r[1] or 0 for r in rows),
        output_tokens=sum(r[2] or 0 for r in rows),
        cost_usd=cost,
    )


def _resolve_id(db: Database, id_or_prefix: str) -> str | None:
    key = id_or_prefix.strip()
    if not key:
        return None
    if db.execute("select 1 from debates where id = ?", [key]).fetchone():
        return key
    if len(key) < MIN_ID_PREFIX:
        return None
    matches = [
        r[0]
        for r in db.execute(
            "select id from debates where substr(id, 1, ?) = ? order by created_at desc limit 11",
            [len(key), key],
        ).fetchall()
    ]
    if len(matches) > 1:
        raise AmbiguousIdError(key, matches)
    return matches[0] if matches else None


def _load_record(db: Database, debate_id: str) -> DebateRecord:
    row = _dict_rows(db, "select * from debates where id = ?", [debate_id])[0]
    seats = tuple(
        Seat(label=r["label"], role=r["role"], model=r["model"])
        for r in _dict_rows(db, "select * from seats where debate_id = ? order by position, label", [debate_id])
    )
    turns = tuple(
        TurnRecord(
            id=r["id"],
            debate_id=r["debate_id"],
            round=r["round"],
            seat=r["seat"],
            role=r["role"],
            kind=r["kind"] or "",
            model=r["model"] or "",
            text=r["text"] or "",
            started_at=from_iso(r["started_at"]) or 0.0,
            duration_ms=r["duration_ms"] or 0,
            input_tokens=r["input_tokens"] or 0,
            output_tokens=r["output_tokens"] or 0,
            status=r["status"],
            error=r["error"],
            cost_usd=r["cost_usd"],
        )
        for r in _dict_rows(db, "select * from turns where debate_id = ? order by round, id", [debate_id])
    )
    verdict_row = db.execute("select json from verdicts where debate_id = ?", [debate_id]).fetchone()
    notices = tuple(
        NoticeRecord(at=from_iso(r["at"]) or 0.0, level=r["level"] or "info", text=r["text"])
        for r in _dict_rows(db, "select * from notices where debate_id = ? order by id", [debate_id])
    )
    return DebateRecord(
        id=row["id"],
        topic=row["topic"],
        format=row["format"],
        status=row["status"],
        created_at=from_iso(row["created_at"]) or 0.0,
        finished_at=from_iso(row["finished_at"]),
        platform=row["platform"],
        channel=row["channel"],
        thread=row["thread"],
        requested_by=row["requested_by"],
        rounds_planned=row["rounds_planned"] or 0,
        rounds_completed=row["rounds_completed"] or 0,
        effort=row["effort"],
        judge=row["judge"],
        input_tokens=row["input_tokens"] or 0,
        output_tokens=row["output_tokens"] or 0,
        cost_usd=row["cost_usd"],
        error=row["error"],
        warnings=tuple(json.loads(row["warnings"] or "[]")),
        spec=DebateSpec.model_validate_json(row["spec"]) if row["spec"] else None,
        seats=seats,
        turns=turns,
        verdict=Verdict.model_validate_json(verdict_row[0]) if verdict_row and verdict_row[0] else None,
        notices=notices,
        tally=_tally(db, debate_id),
    )


def _summary(row: dict[str, Any]) -> DebateSummary:
    recommendation = row["v_recommendation"]
    if recommendation and len(recommendation) > RECOMMENDATION_SNIPPET_CHARS:
        recommendation = recommendation[: RECOMMENDATION_SNIPPET_CHARS - 1].rstrip() + "…"
    return DebateSummary(
        id=row["id"],
        topic=row["topic"],
        format=row["format"],
        status=row["status"],
        created_at=from_iso(row["created_at"]) or 0.0,
        finished_at=from_iso(row["finished_at"]),
        platform=row["platform"],
        channel=row["channel"],
        thread=row["thread"],
        requested_by=row["requested_by"],
        rounds_planned=row["rounds_planned"] or 0,
        rounds_completed=row["rounds_completed"] or 0,
        winner=row["v_winner"],
        winner_model=row["v_model"],
        split=bool(row["v_split"]),
        recommendation=recommendation,
        votes=row["v_votes"] or 0,
        cost_usd=row["cost_usd"],
        error=row["error"],
    )


# Each FTS table: how its rows join back to a debate, and what a hit there is called.
@dataclass(frozen=True)
class _FtsSource:
    where: HitWhere
    fts: str
    join: str  # joins `best` (the ranked FTS rowids) to the debate as `d`

    @property
    def candidates_sql(self) -> str:
        """The best `:limit` of the newest `:window` matches, bm25 first (ties: newest), with their debate.

        `order by rowid desc limit :window` walks the FTS index in its own order and stops, so only
        those rows are scored; bm25's IDF still counts every match in the table.
        """
        return f"""
            with recent as (
                select rowid, bm25({self.fts}) as score from {self.fts}
                where {self.fts} match :query order by rowid desc limit :window
            ),
            best as (select rowid, score from recent order by score, rowid desc limit :limit)
            select best.rowid, best.score, d.id, d.topic, d.created_at, d.status
            from best {self.join}"""

    @property
    def snippets_sql(self) -> str:
        """Snippets for the chosen rowids only: one pass over the matches between `:lo` and `:hi`.

        The rowid range goes to FTS5 as a scan bound; `+rowid in (…)` is kept out of it (a lookup
        per rowid costs a doclist seek each), so the snippet is built only for the rows wanted.
        """
        return f"""
            select rowid, snippet({self.fts}, -1, '[', ']', '…', {SNIPPET_TOKENS}) from {self.fts}
            where {self.fts} match :query and rowid between :lo and :hi
              and +rowid in (select value from json_each(:rowids))"""


_FTS_SOURCES: tuple[_FtsSource, ...] = (
    _FtsSource("topic", "debates_fts", "join debates d on d.rowid = best.rowid"),
    _FtsSource("turn", "turns_fts", "join turns t on t.id = best.rowid join debates d on d.id = t.debate_id"),
    _FtsSource(
        "recommendation",
        "verdicts_fts",
        "join verdicts v on v.rowid = best.rowid join debates d on d.id = v.debate_id",
    ),
)


class _Candidate(NamedTuple):
    source: _FtsSource
    rowid: int
    rank: float
    debate_id: str
    topic: str
    created_at: float
    status: DebateStatus


def _fts_queries(db: Database, query: str) -> list[str]:
    """The quoted query (sqlite-utils `quote=True` semantics), then a words-only fallback."""
    candidates = [db.quote_fts(query)]
    words = "".join(ch if ch.isalnum() else " " for ch in query).split()
    candidates.append(" ".join(f'"{w}"' for w in words))
    return [c for c in candidates if c.strip()]


def _search(db: Database, query: str, limit: int) -> list[SearchHit]:
    for fts_query in _fts_queries(db, query):
        try:
            return _ranked_hits(db, fts_query, limit)
        except sqlite3.OperationalError as error:  # an FTS syntax corner quote_fts missed
            log.info("search query %r rejected by FTS (%s); retrying with words only", query[:80], error)
    return []


def _ranked_hits(db: Database, fts_query: str, limit: int) -> list[SearchHit]:
    """Rank a few candidates per FTS table, keep each debate's best, then build `limit` snippets."""
    best: dict[str, _Candidate] = {}
    # a debate can match many turns; fetch enough rows to fill `limit` distinct debates
    args = {"query": fts_query, "window": SEARCH_RECENT_MATCHES, "limit": limit * SEARCH_CANDIDATES_PER_HIT}
    for source in _FTS_SOURCES:
        for rowid, rank, debate_id, topic, created_at, status in db.execute(source.candidates_sql, args):
            current = best.get(debate_id)
            if current is None or rank < current.rank:
                created = from_iso(created_at) or 0.0
                best[debate_id] = _Candidate(source, rowid, rank, debate_id, topic, created, status)
    chosen = sorted(best.values(), key=lambda c: (c.rank, -c.created_at))[:limit]
    snippets: dict[tuple[str, int], str] = {}
    for source in _FTS_SOURCES:
        rowids = [c.rowid for c in chosen if c.source is source]
        if rowids:
            rows = db.execute(
                source.snippets_sql,
                {"query": fts_query, "lo": min(rowids), "hi": max(rowids), "rowids": json.dumps(rowids)},
            )
            snippets.update(((source.fts, rowid), snippet or "") for rowid, snippet in rows)
    return [
        SearchHit(
            debate_id=c.debate_id,
            topic=c.topic,
            where=c.source.where,
            snippet=snippets.get((c.source.fts, c.rowid), ""),
            created_at=c.created_at,
            status=c.status,
            rank=c.rank,
        )
        for c in chosen
    ]
