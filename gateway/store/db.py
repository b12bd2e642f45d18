"""The database connector: an async psycopg pool with dict rows and explicit transactions.

Repositories receive a :class:`Database` and run their named SQL inside :meth:`transaction`.
Driver errors that carry meaning are translated at this boundary by constraint name
(:func:`constraint_of`), so domain code never matches on psycopg exception text (STYLE, example 3).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import sql as psql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

Connection = psycopg.AsyncConnection[DictRow]
Params = Mapping[str, Any]
Statement = str | psql.Composed  # a named .sql block, or one composed with psycopg.sql.Identifier


class Database:
    """A pool of connections to the one source of truth."""

    def __init__(self, pool: AsyncConnectionPool[Connection]) -> None:
        self.pool = pool

    @classmethod
    async def open(cls, url: str, *, size: int = 8, name: str = "paygate") -> Database:
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=size,
            name=name,
            open=False,
            # Autocommit connections: a lone read is one round trip, and every transaction is an
            # explicit conn.transaction() (BEGIN ... COMMIT). No check on checkout: it would cost a
            # round trip per transaction; a connection that died with a restarted server fails its
            # one request (whose caller treats it as unconfirmed) and the pool replaces it.
            kwargs={"row_factory": dict_row, "autocommit": True},
            connection_class=psycopg.AsyncConnection[DictRow],
        )
        await pool.open(wait=True, timeout=30)
        return cls(pool)

    async def close(self) -> None:
        await self.pool.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """One explicit transaction: committed when the block ends, rolled back if it raises."""
        async with self.pool.connection() as conn:
            # Pipeline mode: statements whose results are not read yet (BEGIN, and writes whose
            # outcome the transaction does not inspect) travel with the next statement that is
            # read, so a transaction costs fewer round trips. Reading a result, and COMMIT, sync.
            async with conn.pipeline(), conn.transaction():
                yield conn

    async def fetch_one(self, sql: Statement, params: Params | None = None) -> dict[str, Any] | None:
        """Run one statement on its own: autocommit, so one round trip, and a write commits by itself."""
        async with self.pool.connection() as conn:
            return await (await conn.execute(sql, params)).fetchone()

    async def fetch_all(self, sql: Statement, params: Params | None = None) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            return await (await conn.execute(sql, params)).fetchall()


async def fetch_one(conn: Connection, sql: Statement, params: Params | None = None) -> dict[str, Any] | None:
    return await (await conn.execute(sql, params)).fetchone()


async def fetch_required(conn: Connection, sql: Statement, params: Params | None = None) -> dict[str, Any]:
    """The row a statement must return (an INSERT or UPSERT ... RETURNING under the caller's locks);
    none back is a broken invariant, raised rather than asserted (``assert`` vanishes under -O)."""
    row = await fetch_one(conn, sql, params)
    if row is None:
        raise RuntimeError(f"a statement that must return a row returned none: {str(sql)[:80]!r}")
    return row


async def fetch_all(conn: Connection, sql: Statement, params: Params | None = None) -> list[dict[str, Any]]:
    return await (await conn.execute(sql, params)).fetchall()


def constraint_of(error: BaseException) -> str | None:
    """The constraint (or index) a psycopg integrity error names, if any."""
    if isinstance(error, psycopg.errors.IntegrityError):
        return error.diag.constraint_name
    return None
