"""Client CPU of one autocommit statement on Postgres, sent three ways (issue 24, round 11): `python -m
bench.pg_loop_statements` (~20 s).

- `loop, pool`: from the event loop through psycopg's AsyncConnectionPool (dbos_loop_statements.py, the product).
- `loop, one connection`: from the loop on one AsyncConnection in turn (what the pool costs on top).
- `thread, SQLAlchemy`: from a thread of the pool (`asyncio.to_thread`) on a SQLAlchemy pooled connection in
  autocommit without a ping (what DBOS's thread pool did for a step's check, record and stream write).

Each way sends 3,000 INSERTs from 1, 5 and 20 concurrent tasks against the bench's embedded Postgres; the
figure is this process's CPU (user + sys) over the statements, so the server's own is not in it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Awaitable, Callable

import psycopg
import sqlalchemy as sa
from psycopg_pool import AsyncConnectionPool

from bench.common import Table
from bench.pg import BenchPostgres

SQL = "insert into t (v) values (%(v)s)"
WARM = 50


def cpu_s() -> float:
    times = os.times()
    return times.user + times.system


async def per_statement_us(send: Callable[[], Awaitable[None]], statements: int, tasks: int) -> float:
    """CPU of this process per statement, `statements` sent by `tasks` tasks at once, after a warm-up."""
    async def task(n: int) -> None:
        for _ in range(n):
            await send()

    await task(WARM)
    start = cpu_s()
    await asyncio.gather(*(task(statements // tasks) for _ in range(tasks)))
    return (cpu_s() - start) / statements * 1e6


async def loop_pool(url: str, statements: int, tasks: int) -> float:
    async with AsyncConnectionPool(url, min_size=1, max_size=4, open=False, kwargs={"autocommit": True}) as pool:
        async def send() -> None:
            async with pool.connection() as conn:
                await conn.execute(SQL, {"v": "x"})
        return await per_statement_us(send, statements, tasks)


async def loop_connection(url: str, statements: int, tasks: int) -> float:
    lock = asyncio.Lock()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        async def send() -> None:
            async with lock:
                await conn.execute(SQL, {"v": "x"})
        return await per_statement_us(send, statements, tasks)


async def thread_sqlalchemy(url: str, statements: int, tasks: int) -> float:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1), pool_pre_ping=False)

    def insert() -> None:
        with engine.connect() as conn:
            driver = conn.connection.dbapi_connection
            assert driver is not None
            driver.autocommit = True
            conn.exec_driver_sql(SQL, {"v": "x"})
            driver.autocommit = False

    async def send() -> None:
        await asyncio.to_thread(insert)

    try:
        return await per_statement_us(send, statements, tasks)
    finally:
        engine.dispose()


WAYS = {"loop, pool": loop_pool, "loop, one connection": loop_connection, "thread, SQLAlchemy": thread_sqlalchemy}


async def run(statements: int, concurrency: list[int]) -> Table:
    table = Table(f"pg_loop_statements — client CPU per autocommit INSERT ({statements} a way and level)")
    server = BenchPostgres.start()
    try:
        url = server.create_database("loop_statements")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("create table t (id bigserial primary key, v text)")
        for tasks in concurrency:
            figures = {name: await way(url, statements, tasks) for name, way in WAYS.items()}
            for name, us in figures.items():
                table.add(f"{tasks} at once · {name}", f"{us:.0f} µs")
            table.add(f"{tasks} at once · loop, pool ÷ thread, SQLAlchemy",
                      f"{figures['loop, pool'] / figures['thread, SQLAlchemy']:.2f}")
    finally:
        server.stop()
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--statements", type=int, default=3000)
    parser.add_argument("--concurrency", default="1,5,20")
    args = parser.parse_args()
    print(asyncio.run(run(args.statements, [int(c) for c in args.concurrency.split(",")])).render())


if __name__ == "__main__":
    main()
