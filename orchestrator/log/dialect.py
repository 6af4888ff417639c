"""`Conn`: what every log operation runs on, one transaction of one database.

The operations (reads.py, writes.py, team.py, renderers.py) are written once, as `async def op(c: Conn, …)` over SQL
both databases read (`:name` parameters, `is not distinct from`, `true`/`false`, `on conflict … do update`,
`returning`). What differs lives in one dialect module per database, sqlite.py (the connection its writer thread
owns; the coroutine is driven there and never suspends) and postgres/store.py (a pooled psycopg connection): how a
statement runs and is spelled, how a time is stored, the insertion order's name, row locks, full-text search.

A statement is `send`t; its answer (`Sent`) is read when the operation needs it. SQLite runs it at once; Postgres
sends it without waiting (pipeline mode), and reading an answer waits once for everything sent before it, so an
operation that reads nothing until `commit` costs one round trip. Under READ COMMITTED each statement sees what
committed before it started: a statement sent after `send_lock` sees every write of the debate that waited on the
lock, where a check inside the locking statement itself would not (its snapshot is older than its lock wait).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.log.records import DebateNotFoundError, Scope, SearchHit

Args = dict[str, Any]


class Sent(ABC):
    """A statement sent; `answer` waits for it where it may still be on its way (Postgres)."""

    @abstractmethod
    async def answer(self) -> tuple[list[str], Sequence[Sequence[Any]]]:
        """Its column names and rows (none for a statement that returns no rows)."""

    async def rows(self) -> list[dict[str, Any]]:
        names, found = await self.answer()
        return [dict(zip(names, row, strict=True)) for row in found]

    async def values(self) -> list[Any]:
        """The first column of every row."""
        return [row[0] for row in (await self.answer())[1]]

    async def one(self) -> Any:
        """The first column of the first row, or None."""
        found = await self.values()
        return found[0] if found else None


class Answered(Sent):
    """A statement that has run: its answer in hand."""

    def __init__(self, names: list[str], found: Sequence[Sequence[Any]]) -> None:
        self.names = names
        self.found = found

    async def answer(self) -> tuple[list[str], Sequence[Sequence[Any]]]:
        return self.names, self.found


@dataclass(frozen=True)
class TableColumns:
    """A table of the log as its database lists it: every column, and those holding text a write may change
    (Postgres's generated search vectors are not among them)."""

    name: str
    columns: tuple[str, ...]
    text_columns: tuple[str, ...]


class Conn(ABC):
    seq: str  # the insertion-order column of debates, interjections, verdicts: SQLite's rowid, Postgres's seq
    lock: str  # appended to a select of the debate's row to lock it until the transaction ends
    seat_models: str  # a JSON text list of the seats' models of debate `d`, in seat order
    not_final: str  # message `m` does not show its final text yet (as its partial index says it)
    modifying_ctes: bool = False  # a WITH may hold an UPDATE … RETURNING (Postgres; not SQLite)

    @abstractmethod
    async def send(self, sql: str, args: Args | None = None, *, prepare: bool | None = None) -> Sent:
        """Run `sql`; its answer is read from what this returns (see the module's doc)."""

    @abstractmethod
    async def executemany(self, sql: str, args: Sequence[Args]) -> None:
        """Sent like `send`; nothing to read back."""

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
    async def tables(self) -> list[TableColumns]:
        """Every table of the log's schema as the database lists it now (not the migration list): the
        search indexes' own tables and the migrations' record left out. A purge clears what this finds, so a
        table added later is covered without edits."""

    @abstractmethod
    async def lock_admission(self) -> None:
        """Hold admission (counting the quotas and taking a slot) for this transaction, across processes."""

    async def commit(self) -> None:
        """The operation has sent every write: commit now, so the answers it reads after cost no wait of
        their own (Postgres: COMMIT goes out with them). After it the operation only reads answers, and
        raises nothing that should undo a write (SQLite's writer thread still commits after it returns)."""
        return None

    async def ids_written(self, tables: Sequence[str]) -> None:
        """After rows were written with their integer `id`s given: the next id a table hands out follows them."""
        return None

    async def rows(self, sql: str, args: Args | None = None, *, prepare: bool | None = None) -> list[dict[str, Any]]:
        """Every row, as a dict by column name."""
        return await (await self.send(sql, args, prepare=prepare)).rows()

    async def values(self, sql: str, args: Args | None = None) -> list[Any]:
        """The first column of every row ([] for a statement that returns none)."""
        return await (await self.send(sql, args)).values()

    async def one(self, sql: str, args: Args | None = None) -> Any:
        """The first column of the first row, or None."""
        return await (await self.send(sql, args)).one()

    async def send_insert(self, table: str, row: Args, tail: str = "", *, unless: str | None = None) -> Sent:
        """Insert `row`; with `unless` (a query over `row`'s parameters), only when that query finds nothing."""
        columns = ", ".join(f'"{c}"' for c in row)
        marks = ", ".join(":" + c for c in row)
        source = f"values ({marks})" if unless is None else f"select {marks} where not exists ({unless})"
        return await self.send(f"insert into {table} ({columns}) {source} {tail}", row)

    async def send_insert_rows(self, table: str, rows: Sequence[Args], tail: str = "") -> Sent | None:
        """Insert `rows` (each with the same columns) in one statement; None when there are none."""
        if not rows:
            return None
        columns = ", ".join(f'"{c}"' for c in rows[0])
        tuples = ", ".join("(" + ", ".join(f":{c}_{i}" for c in row) + ")" for i, row in enumerate(rows))
        args = {f"{c}_{i}": v for i, row in enumerate(rows) for c, v in row.items()}
        return await self.send(f"insert into {table} ({columns}) values {tuples} {tail}", args)

    async def insert(self, table: str, row: Args, tail: str = "") -> list[Any]:
        return await (await self.send_insert(table, row, tail)).values()

    async def update(self, table: str, key: Args, row: Args) -> None:
        """Sent; any error comes with the next answer read, or the commit."""
        sets = ", ".join(f'"{c}" = :set_{c}' for c in row)
        where = " and ".join(f'"{c}" = :key_{c}' for c in key)
        await self.send(f"update {table} set {sets} where {where}",
                        {f"set_{c}": v for c, v in row.items()} | {f"key_{c}": v for c, v in key.items()})

    async def send_lock(self, debate_id: str) -> Sent:
        """Lock the debate's row for this transaction (its writes apply one at a time); the answer's one
        value is its status. An unknown debate raises DebateNotFoundError, here or at the first wait
        after (Postgres), and nothing sent after the lock applies."""
        sent = await self.send(f"select status from debates where id = :id{self.lock}", {"id": debate_id})
        if await sent.one() is None:
            raise DebateNotFoundError(debate_id)
        return sent

    async def send_debate_exists(self, debate_id: str) -> None:
        """A write whose every row refers to the debate, and whose conflicts its keys settle (an upsert), needs
        no lock, only an unknown debate refused: SQLite (no foreign keys) locks the row as `send_lock` does;
        Postgres sends nothing, its foreign key refuses the row and DebateNotFoundError is raised."""
        await self.send_lock(debate_id)

    async def lock_debate(self, debate_id: str) -> str:
        """`send_lock`, waiting for the status."""
        return str(await (await self.send_lock(debate_id)).one())


def in_list(name: str, items: Sequence[Any]) -> tuple[str, Args]:
    """`:name0, :name1, …` for an `in (…)` list, with its parameters."""
    return ", ".join(f":{name}{i}" for i in range(len(items))), {f"{name}{i}": v for i, v in enumerate(items)}
