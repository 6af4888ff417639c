"""The debate log: one SQLite file, one database thread, full-text recall, votes.

Work runs in the thread that owns the connection (orchestrator/sqlite_thread.py). Reads go through
the same thread: a read is a few indexed lookups, and one connection means every read sees every
write that was awaited before it. What the log returns lives in orchestrator/records.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from sqlite_utils import Database

from orchestrator.log import search as fts
from orchestrator.log.reads import (
    dict_rows,
    load_record,
    outside_transaction,
    require_debate,
    resolve_id,
    summary,
    table,
    tally,
    token_totals,
)
from orchestrator.log.records import (
    MIN_ID_PREFIX,
    RECOMMENDATION_SNIPPET_CHARS,
    AmbiguousIdError,
    DebateNotFoundError,
    DebateRecord,
    DebateSummary,
    HitWhere,
    NoticeRecord,
    SearchHit,
    StoreClosedError,
    StoreError,
    Tally,
    TokenTotals,
    TurnRecord,
    from_iso,
    to_iso,
)
from orchestrator.log.writer_thread import DatabaseThread, open_database
from orchestrator.models import DebateSpec, Outcome, Turn, Verdict, Vote, now
from orchestrator.providers.pricing import estimate_cost
from orchestrator.safety import redact_value

__all__ = [
    "MIN_ID_PREFIX", "RECOMMENDATION_SNIPPET_CHARS", "AmbiguousIdError", "DebateNotFoundError", "DebateRecord",
    "DebateSummary", "HitWhere", "NoticeRecord", "SearchHit", "Store", "StoreClosedError", "StoreError", "Tally",
    "TokenTotals", "TurnRecord", "from_iso", "open_database", "to_iso",
]

T = TypeVar("T")
Redactor = Callable[[str], str]
INTERRUPTED_ERROR = "interrupted by a restart"


class Store:
    """The SQLite debate log. `async with Store(path) as store:` or `start()` / `close()`."""

    def __init__(self, path: str | Path, *, redact: Redactor | None = None) -> None:
        self.path = Path(path)
        self._redact: Redactor = redact or (lambda text: text)
        self._db = DatabaseThread(self.path)

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the file in the database thread, set WAL, run pending migrations."""
        await self._db.start()

    async def close(self) -> None:
        """Finish every queued job, then close the connection (checkpointing the WAL)."""
        await self._db.close()

    async def __aenter__(self) -> Store:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def is_open(self) -> bool:
        return self._db.is_open

    async def _submit(self, fn: Callable[[Database], T], *, write: bool) -> T:
        return await self._db.submit(fn, write=write)

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
            if table(db, "debates").count_where("id = ?", [spec.id]):
                return
            table(db, "debates").insert(
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
            table(db, "seats").insert_all(
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
            require_debate(db, turn.debate_id)
            turns = table(db, "turns").insert(row)
            assert turns.last_rowid is not None
            return turns.last_rowid

        return await self.write(fn)

    async def add_notice(self, debate_id: str, level: str, text: str, *, at: float | None = None) -> None:
        row = {
            "debate_id": debate_id,
            "at": to_iso(at if at is not None else now()),
            "level": level,
            "text": self._redact(text),
        }

        def fn(db: Database) -> None:
            require_debate(db, debate_id)
            table(db, "notices").insert(row)

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
            require_debate(db, debate_id)
            # upsert is INSERT … ON CONFLICT DO UPDATE: the rowid, and so the FTS entry, survives
            table(db, "verdicts").upsert(row, pk="debate_id")

        await self.write(fn)

    async def finish_debate(self, debate_id: str, outcome: Outcome, *, at: float | None = None) -> None:
        """Record how the debate ended. Tokens and cost fall back to the sum over its turns."""
        finished = to_iso(at if at is not None else now())
        warnings = [self._redact(w) for w in outcome.warnings]
        error = self._redact(outcome.error) if outcome.error else None

        def fn(db: Database) -> None:
            require_debate(db, debate_id)
            totals = token_totals(db, debate_id)
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
            table(db, "debates").update(debate_id, updates)

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
            require_debate(db, vote.debate_id)
            table(db, "votes").upsert(row, pk=("debate_id", "user"))
            return tally(db, vote.debate_id)

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
            table(db, "messages").upsert(row, pk=("debate_id", "key"))

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
                table(db, name).rebuild_fts()

        await self._submit(outside_transaction(fn), write=False)

    # -- reads ----------------------------------------------------------------------------------

    async def get_message(self, debate_id: str, key: str) -> str | None:
        def fn(db: Database) -> str | None:
            row = db.execute(
                "select message_id from messages where debate_id = ? and key = ?", [debate_id, key]
            ).fetchone()
            return row[0] if row else None

        return await self.read(fn)

    async def tally(self, debate_id: str) -> Tally:
        return await self.read(lambda db: tally(db, debate_id))

    async def token_totals(self, debate_id: str) -> TokenTotals:
        return await self.read(lambda db: token_totals(db, debate_id))

    async def resolve_id(self, id_or_prefix: str) -> str | None:
        """The full id for an id or a unique prefix of at least 4 characters.

        None when nothing matches; AmbiguousIdError when the prefix matches several debates.
        """
        return await self.read(lambda db: resolve_id(db, id_or_prefix))

    async def get_debate(self, id_or_prefix: str) -> DebateRecord | None:
        """Everything about one debate, by id or unique prefix (>= 4 chars); None if unknown.

        Raises AmbiguousIdError when a prefix matches more than one debate.
        """

        def fn(db: Database) -> DebateRecord | None:
            debate_id = resolve_id(db, id_or_prefix)
            return None if debate_id is None else load_record(db, debate_id)

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
        return await self.read(lambda db: [summary(row) for row in dict_rows(db, sql, args)])

    async def interrupted(self) -> list[DebateSummary]:
        """Debates still marked "running": on start-up these were cut off by a restart."""
        sql = """
            select d.*, null as v_winner, 0 as v_split, null as v_recommendation, 0 as v_votes,
                   null as v_model
            from debates d where d.status = 'running' order by d.created_at desc, d.rowid desc
        """
        return await self.read(lambda db: [summary(row) for row in dict_rows(db, sql, [])])

    async def latest_running(self) -> DebateSummary | None:
        running = await self.interrupted()
        return running[0] if running else None

    async def search(self, query: str, limit: int = 20) -> list[SearchHit]:
        """Full-text search over topics, turns and verdicts, best bm25 first, one hit per debate.

        User text is always quoted (every token becomes a literal phrase), so FTS syntax in the
        query — `AND (cats`, `"`, `*`, `NEAR(` — is searched for, never interpreted.

        Ranking trade-off: bm25 costs time per matching row, so in each FTS table only the
        newest `search.SEARCH_RECENT_MATCHES` matches compete (FTS5 walks its index newest-first and
        stops there). A query with fewer matches than that — rare words, most multi-word
        queries — is ranked over the whole log; a very common one returns the best among its
        recent matches, not the best of all time. Scores stay comparable either way (bm25's
        IDF counts every match). Ties go to the newer row; snippets are built for the final
        hits only.
        """
        if not query.strip() or limit <= 0:
            return []
        return await self.read(lambda db: fts.search(db, query, limit))

    # -- helpers --------------------------------------------------------------------------------

    def _redact_value(self, value: Any) -> Any:
        return redact_value(value, self._redact)
