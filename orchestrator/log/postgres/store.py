"""The Postgres `DebateLog`: a small connection pool, one transaction per call, the same records.

Chosen by `open_log` when DEBATE_DATABASE_URL is set. Every method is the `DebateLog` protocol
(../protocol.py) with the SQLite log's meaning; the SQL lives in reads.py, writes.py and search.py.
Several processes on several hosts may share one database: idempotent writes lock the debate's
row, admission holds an advisory lock, and a migration another process is applying is waited for.

Read-only (`debate history`, `show`, …): every connection sets `default_transaction_read_only`, so
the server itself refuses a write; nothing is migrated; a database without the log's tables reads as
an empty log, and one with an older schema is refused with what to run.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from orchestrator.budgets import CallUsage, SpentCall
from orchestrator.log.postgres import reads, renderers, schema, spend, team, writes
from orchestrator.log.postgres import search as fts
from orchestrator.log.postgres.reads import Conn
from orchestrator.log.records import (
    DebateRecord,
    DebateSummary,
    JudgeAgreement,
    MessageRecord,
    ReadOnlyLogError,
    Scope,
    SearchHit,
    StoreClosedError,
    StoreError,
    Tally,
)
from orchestrator.models import ChannelDefaults, DebateSpec, Interjection, Outcome, Turn, Verdict, Vote, now
from orchestrator.quotas import Quota

T = TypeVar("T")
POOL_SIZE = 16
CONNECT_TIMEOUT_S = 10.0
# how long one read or write waits for a free connection before the log counts as failed (a debate's
# write failing stops the debate): a worker running hundreds of debates on a busy host keeps each
# connection far longer than its queries take, and 10 s failed 1 debate in 6 at 500 per worker
WAIT_S = 60.0


def redact_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)


class PostgresLog:
    """The Postgres `DebateLog`. `async with PostgresLog(url) as log:` or `start()` / `close()`.

    `runner` and `readonly` mean what they mean for the SQLite `Store`.
    """

    def __init__(self, url: str, *, runner: str | None = None, readonly: bool = False) -> None:
        self.url = url
        self.runner = runner
        self.readonly = readonly
        self._pool: AsyncConnectionPool[Any] | None = None
        self._empty = False  # read-only on a database the log has never been written to

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, and bring the schema up to date (a writer) or check it (a reader)."""
        if self._pool is not None:
            return
        kwargs: dict[str, Any] = {"autocommit": True}
        if self.readonly:
            kwargs["options"] = "-c default_transaction_read_only=on"
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self.url, min_size=1, max_size=POOL_SIZE, kwargs=kwargs, open=False, timeout=CONNECT_TIMEOUT_S,
            name="debate-log")
        try:
            # one plain connection first: a wrong URL fails at once with the server's own words
            async with await psycopg.AsyncConnection.connect(
                    self.url, connect_timeout=int(CONNECT_TIMEOUT_S), **kwargs) as conn:
                await (self._check(conn) if self.readonly else schema.migrate(conn))
            await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except (PoolTimeout, psycopg.Error) as error:
            await pool.close()
            raise StoreError(f"cannot open the debate log at {redact_url(self.url)}: {error}"
                             " (check DEBATE_DATABASE_URL)") from error
        except BaseException:
            await pool.close()
            raise
        self._pool = pool

    async def _check(self, conn: Conn) -> None:
        done = await schema.applied(conn)
        self._empty = not done
        if done and [n for n in schema.migration_names() if n not in done]:
            raise StoreError(f"the debate log at {redact_url(self.url)} uses an older schema; run `debate serve` or "
                             "`debate run` once to upgrade it")

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> PostgresLog:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _run(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        if self._pool is None:
            raise StoreClosedError()
        async with self._pool.connection(timeout=WAIT_S) as conn, conn.transaction():
            return await fn(conn)

    async def _write(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        if self.readonly:
            raise ReadOnlyLogError()
        return await self._run(fn)

    async def _read(self, fn: Callable[[Conn], Awaitable[T]], empty: T) -> T:
        if self._empty and self._pool is not None:
            return empty
        return await self._run(fn)

    # -- writes ---------------------------------------------------------------------------------

    async def create_debate(self, spec: DebateSpec, *, at: float | None = None) -> None:
        await self._write(lambda c: writes.create_debate(c, spec, at if at is not None else now(), self.runner))

    async def admit(self, spec: DebateSpec, quota: Quota, *, at: float | None = None) -> None:
        await self._write(lambda c: writes.admit(c, spec, quota, at if at is not None else now(), self.runner))

    async def add_turn(self, turn: Turn) -> int:
        return await self._write(lambda c: writes.add_turn(c, turn))

    async def add_call(self, call: CallUsage) -> None:
        await self._write(lambda c: spend.add_call(c, call))

    async def spent_calls(self, since: float) -> list[SpentCall]:
        return await self._read(lambda c: spend.spent_calls(c, since), [])

    async def add_notice(self, debate_id: str, level: str, text: str, *, at: float | None = None) -> None:
        await self._write(lambda c: writes.add_notice(c, debate_id, level, text, at if at is not None else now()))

    async def set_verdict(self, debate_id: str, verdict: Verdict, *, at: float | None = None, number: int = 1) -> None:
        await self._write(lambda c: writes.set_verdict(c, debate_id, verdict, at if at is not None else now(), number))

    async def finish_debate(self, debate_id: str, outcome: Outcome, *, at: float | None = None) -> None:
        await self._write(lambda c: writes.finish_debate(c, debate_id, outcome, at if at is not None else now()))

    async def running_runners(self, prefix: str) -> list[str]:
        return await self._read(lambda c: writes.running_runners(c, prefix), [])

    async def fail_runner(self, runner: str, error: str, *, at: float | None = None) -> list[str]:
        return await self._write(lambda c: writes.fail_runner(c, runner, error, at if at is not None else now()))

    async def record_vote(self, vote: Vote, scope: Scope | None = None) -> Tally:
        return await self._write(lambda c: writes.record_vote(c, vote, scope))

    async def set_message(self, debate_id: str, key: str, platform: str, channel: str | None, message_id: str,
                          *, final: bool = False) -> None:
        await self._write(lambda c: writes.set_message(c, debate_id, key, platform, channel, message_id, final))

    async def claim_request(self, key: str, *, keep_s: float = 86_400.0) -> bool:
        return await self._write(lambda c: writes.claim_request(c, key, time.time(), keep_s))

    async def add_interjection(self, note: Interjection, *, max_waiting: int) -> int:
        return await self._write(lambda c: team.add_interjection(c, note, max_waiting))

    async def take_interjections(self, debate_id: str, round: int, limit: int) -> list[Interjection]:
        return await self._write(lambda c: team.take_interjections(c, debate_id, round, limit))

    async def claim_workspaces(self, renderer: str, platform: str, workspaces: Sequence[str],
                               lease_s: float) -> list[str]:
        if not workspaces:
            return []
        return await self._write(lambda c: renderers.claim_workspaces(c, renderer, platform, list(workspaces), lease_s))

    async def release_workspaces(self, renderer: str, platform: str, workspaces: Sequence[str]) -> None:
        if workspaces:
            await self._write(lambda c: renderers.release_workspaces(c, renderer, platform, list(workspaces)))

    async def begin_continuation(self, debate_id: str, *, at: float | None = None, quota: Quota | None = None,
                                 requested_by: str | None = None, facts: Interjection | None = None) -> int:
        when = at if at is not None else now()
        return await self._write(lambda c: team.begin_continuation(c, debate_id, quota, requested_by, facts, when))

    async def set_channel_defaults(
        self, platform: str, workspace: str | None, channel: str, defaults: ChannelDefaults, *, by: str | None = None
    ) -> None:
        await self._write(lambda c: team.set_channel_defaults(c, platform, workspace, channel, defaults, by, now()))

    async def interjections(self, debate_id: str) -> list[Interjection]:
        return await self._read(lambda c: team.interjections(c, debate_id), [])

    async def channel_defaults(self, platform: str, workspace: str | None, channel: str) -> ChannelDefaults:
        return await self._read(lambda c: team.channel_defaults(c, platform, workspace, channel), ChannelDefaults())

    async def get_debate(
        self, id_or_prefix: str, scope: Scope | None = None, *, turns: bool = True
    ) -> DebateRecord | None:
        async def fn(conn: Conn) -> DebateRecord | None:
            debate_id = await reads.resolve_id(conn, id_or_prefix, scope)
            return None if debate_id is None else await reads.load_record(conn, debate_id, turns=turns, scope=scope)

        return await self._read(fn, None)

    async def find_by_message(
        self, platform: str, channel: str, message_id: str, scope: Scope | None = None
    ) -> str | None:
        return await self._read(lambda c: reads.find_by_message(c, platform, channel, message_id, scope), None)

    async def get_message(self, debate_id: str, key: str) -> str | None:
        async def fn(conn: Conn) -> str | None:
            found = await reads.values(conn, "select message_id from messages where debate_id = %s and key = %s",
                                       [debate_id, key])
            return found[0] if found else None

        return await self._read(fn, None)

    async def messages(self, debate_id: str) -> dict[str, MessageRecord]:
        return await self._read(lambda c: reads.messages(c, debate_id), {})

    async def threads_to_resume(self, platform: str, root_key: str) -> list[str]:
        return await self._read(lambda c: reads.threads_to_resume(c, platform, root_key), [])

    async def live_threads(self, platform: str, root_keys: Sequence[str]) -> list[tuple[str, str]]:
        return await self._read(lambda c: renderers.live_threads(c, platform, list(root_keys)), [])

    async def tally(self, debate_id: str) -> Tally:
        return await self._read(lambda c: reads.tally(c, debate_id), Tally(debate_id=debate_id))

    async def history(
        self, limit: int = 20, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> list[DebateSummary]:
        return await self._read(lambda c: reads.history(c, limit, scope, platform, channel), [])

    async def judge_agreement(
        self, scope: Scope | None = None, *, platform: str | None = None, channel: str | None = None
    ) -> JudgeAgreement:
        return await self._read(lambda c: reads.judge_agreement(c, scope, platform, channel), JudgeAgreement())

    async def search(self, query: str, limit: int = 20, scope: Scope | None = None) -> list[SearchHit]:
        """Ranked recall over topics, turns and verdicts, one hit per debate (see search.py)."""
        if not query.strip() or limit <= 0:
            return []
        return await self._read(lambda c: fts.search(c, query, limit, scope), [])
