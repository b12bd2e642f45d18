"""The client-side cost of one statement through psycopg, by way of sending it (bench/README.md,
"Where the time goes"): one transaction of 6 unread statements and one read, 2,000 times, on an
embedded PostgreSQL, one connection, in three ways: Database.transaction (pipeline mode), plain
``conn.transaction()`` (a round trip per statement), and one multi-statement simple query
(client-side binding). Prints wall and CPU microseconds per transaction.

    python bench/driver_costs.py
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.support import embedded_database  # noqa: E402
from gateway.store.db import Database  # noqa: E402

ROUNDS = 2000


async def measure(url: str) -> None:
    db = await Database.open(url, size=1)

    async def pipelined() -> None:
        async with db.transaction() as conn:
            for n in range(6):
                await conn.execute("SELECT %(n)s::int", {"n": n})
            await (await conn.execute("SELECT 1")).fetchone()

    async def one_by_one() -> None:
        async with db.pool.connection() as conn, conn.transaction():
            for n in range(6):
                await conn.execute("SELECT %(n)s::int", {"n": n})
            await (await conn.execute("SELECT 1")).fetchone()

    async def one_query() -> None:
        async with db.pool.connection() as conn:
            cursor = psycopg.AsyncClientCursor(conn, row_factory=dict_row)
            await cursor.execute("BEGIN;" + "SELECT %(n)s::int;" * 6 + "SELECT 1; COMMIT", {"n": 1})

    ways: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        ("pipeline (Database.transaction)", pipelined), ("a round trip each", one_by_one),
        ("one simple query", one_query)]
    try:
        for name, way in ways:
            for _ in range(ROUNDS // 10):
                await way()
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(ROUNDS):
                await way()
            print(f"{name:<32} wall {(time.perf_counter() - wall) / ROUNDS * 1e6:6.0f} us, "
                  f"client CPU {(time.process_time() - cpu) / ROUNDS * 1e6:5.0f} us per transaction of 8")
    finally:
        await db.close()


if __name__ == "__main__":
    with embedded_database() as (url, _):
        asyncio.run(measure(url))
