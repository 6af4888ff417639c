"""`Conn`: what every log operation runs on, one transaction of one database.

The operations (reads.py, writes.py, team.py, renderers.py) are written once, as `async def op(c: Conn, …)`
over SQL both databases read: named `:name` parameters, `is not distinct from`, `true`/`false`,
`on conflict … do update`, `returning`. What differs lives in one dialect module per database:
sqlite.py (the connection its writer thread owns; the coroutine is driven there, it never suspends)
and postgres/store.py (a pooled psycopg connection): how a statement runs and how its text is spelled,
how a time is stored, what the insertion order is called, how rows are locked, and full-text search.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from orchestrator.log.records import DebateNotFoundError, Scope, SearchHit

Args = dict[str, Any]


class Conn(ABC):
    seq: str  # the insertion-order column of debates, interjections, verdicts: SQLite's rowid, Postgres's seq
    lock: str  # appended to a select of the debate's row to lock it until the transaction ends
    seat_models: str  # a JSON text list of the seats' models of debate `d`, in seat order
    not_final: str  # message `m` does not show its final text yet (as its partial index says it)

    @abstractmethod
    async def rows(self, sql: str, args: Args | None = None, *, prepare: bool | None = None) -> list[dict[str, Any]]:
        """Every row, as a dict by column name."""

    @abstractmethod
    async def values(self, sql: str, args: Args | None = None) -> list[Any]:
        """The first column of every row ([] for a statement that returns none)."""

    @abstractmethod
    async def executemany(self, sql: str, args: Sequence[Args]) -> None: ...

    @abstractmethod
    def time(self, ts: float | None) -> Any:
        """Seconds since the epoch as the database stores a time."""

    @abstractmethod
    def epoch(self, value: Any) -> float | None:
        """A stored time as seconds since the epoch."""

    @abstractmethod
    async def search(self, query: str, limit: int, scope: Scope | None) -> list[SearchHit]:
        """Full-text recall (search.py `ranked` over the dialect's own index); never an error for user text."""

    @abstractmethod
    async def lock_admission(self) -> None:
        """Hold admission (counting the quotas and taking a slot) for this transaction, across processes."""

    async def ids_written(self, tables: Sequence[str]) -> None:
        """After rows were written with their integer `id`s given: the next id a table hands out follows them."""
        return None

    async def one(self, sql: str, args: Args | None = None) -> Any:
        """The first column of the first row, or None."""
        found = await self.values(sql, args)
        return found[0] if found else None

    async def insert(self, table: str, row: Args, tail: str = "") -> list[Any]:
        columns = ", ".join(f'"{c}"' for c in row)
        return await self.values(f"insert into {table} ({columns}) values ({', '.join(':' + c for c in row)}) {tail}",
                                 row)

    async def update(self, table: str, key: Args, row: Args) -> None:
        sets = ", ".join(f'"{c}" = :set_{c}' for c in row)
        where = " and ".join(f'"{c}" = :key_{c}' for c in key)
        await self.values(f"update {table} set {sets} where {where}",
                          {f"set_{c}": v for c, v in row.items()} | {f"key_{c}": v for c, v in key.items()})

    async def lock_debate(self, debate_id: str) -> str:
        """The debate's status, its row locked for this transaction (its writes apply one at a time)."""
        status = await self.one(f"select status from debates where id = :id{self.lock}", {"id": debate_id})
        if status is None:
            raise DebateNotFoundError(debate_id)
        return str(status)


def in_list(name: str, items: Sequence[Any]) -> tuple[str, Args]:
    """`:name0, :name1, …` for an `in (…)` list, with its parameters."""
    return ", ".join(f":{name}{i}" for i in range(len(items))), {f"{name}{i}": v for i, v in enumerate(items)}
