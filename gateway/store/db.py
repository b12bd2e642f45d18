"""The database connector: an async psycopg pool with dict rows and explicit transactions.

Repositories receive a :class:`Database` and run their named SQL inside :meth:`transaction`.
Driver errors that carry meaning are translated at this boundary by constraint name
(:func:`constraint_of`), so domain code never matches on psycopg exception text (STYLE, example 3).
"""

from __future__ import annotations

import select
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext, suppress
from typing import Any

import orjson
import psycopg
from psycopg import sql as psql
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import set_json_dumps, set_json_loads
from psycopg_pool import AsyncConnectionPool

Connection = psycopg.AsyncConnection[DictRow]
Cursor = psycopg.AsyncCursor[DictRow]
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
            # explicit conn.transaction() (BEGIN ... COMMIT). Connections are checked on checkout
            # without a round trip (:meth:`Database.connection`), not by the pool's ``check``.
            kwargs={"row_factory": dict_row, "autocommit": True},
            connection_class=psycopg.AsyncConnection[DictRow],
            configure=_configure,
        )
        await pool.open(wait=True, timeout=30)
        return cls(pool)

    async def close(self) -> None:
        await self.pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection the server has not given up on (docs/decisions/0003).

        A restarted or crashed server leaves every idle pooled connection dead; lent as they
        are, each would fail one request after the server is back. So a connection the server
        wrote to while it was idle (a shutdown's FATAL notice, the end of a closed socket) is
        closed, which makes the pool discard and replace it, and the next one is taken, without
        the backoff pauses of psycopg_pool's ``check`` loop. While the server is down the pool
        has nothing to lend, so the caller waits for a reconnection (``/readyz`` reports it)."""
        for _ in range(self.pool.max_size + 1):
            async with self.pool.connection() as conn:
                if _abandoned(conn):
                    await conn.close()
                    continue
                yield conn
                return
        raise psycopg.OperationalError("every pooled connection was closed by the server")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """One explicit transaction: committed when the block ends, rolled back if it raises.

        It runs in pipeline mode with BEGIN and COMMIT queued, not synced (docs/decisions/0031):
        BEGIN and every statement whose result is not read yet travel with the next statement that
        is read, and COMMIT with the one sync at the end, so a transaction costs one round trip per
        result it reads, plus one. psycopg's own ``conn.transaction()`` syncs the pipeline when it
        starts and ends (two more round trips each): blocks inside use :func:`savepoint` and
        :func:`pipelined`. An error surfaces where its result is read, else at the final sync."""
        async with self.connection() as conn:
            try:
                async with conn.pipeline(), psycopg.AsyncTransaction(conn):
                    try:
                        yield conn
                    except BaseException:
                        await _sync(conn)  # ends a segment an error aborted, so the ROLLBACK runs
                        raise
            except psycopg.Error as error:
                # A write whose result was never read failed: the queued COMMIT was skipped and the
                # transaction is aborted. Roll it back here, not in the pool's reset.
                if conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                    await conn.rollback()
                raise _statement_error(error) from None

    async def fetch_one(self, sql: Statement, params: Params | None = None) -> dict[str, Any] | None:
        """Run one statement on its own: autocommit, so one round trip, and a write commits by itself."""
        async with self.connection() as conn:
            return await (await conn.execute(sql, params)).fetchone()

    async def fetch_all(self, sql: Statement, params: Params | None = None) -> list[dict[str, Any]]:
        async with self.connection() as conn:
            return await (await conn.execute(sql, params)).fetchall()


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


async def _configure(conn: Connection) -> None:
    """Every pooled connection reads and writes jsonb with orjson (docs/decisions/0031): the same
    documents as the standard library's, several times faster on the hot paths' event details."""
    set_json_dumps(_dumps, conn)
    set_json_loads(orjson.loads, conn)


def _statement_error(error: psycopg.Error) -> psycopg.Error:
    """The error of the statement that failed, not the ``PipelineAborted`` of the COMMIT queued
    behind it: when the server answered the failing write before the block ended, psycopg's
    pipeline exit raises that write's error and then, from its final fetch, ``PipelineAborted``,
    which replaces it (a timing the tests met under load). Callers classify by type (a deadlock is
    retried, a constraint named), so they get the statement's own error whenever answers arrive."""
    context = error.__context__
    if isinstance(error, psycopg.errors.PipelineAborted) and isinstance(context, psycopg.Error) \
            and not isinstance(context, psycopg.errors.PipelineAborted):
        return context
    return error


async def _sync(conn: Connection) -> None:
    """Sync the pipeline ``conn`` is in, if any, discarding the error an aborted segment reports
    (the caller is already handling one)."""
    pipeline = conn._pipeline  # psycopg has no public accessor for the current pipeline
    if pipeline is not None:
        with suppress(psycopg.Error):
            await pipeline.sync()


async def settle(conn: Connection) -> None:
    """Sync the pipeline ``conn`` is in, if any: every statement queued so far has run, and the
    first error one of them met is raised here, not where a later statement reads its result."""
    pipeline = conn._pipeline
    if pipeline is not None:
        await pipeline.sync()


@asynccontextmanager
async def savepoint(conn: Connection, name: str = "nested") -> AsyncIterator[None]:
    """A nested block inside :meth:`Database.transaction`: on an error, the transaction goes back
    to where the block began and goes on. SAVEPOINT and RELEASE are queued in the pipeline, so a
    block that succeeds costs no round trip of its own."""
    await conn.execute(psql.SQL("SAVEPOINT {}").format(psql.Identifier(name)))
    try:
        yield
    except BaseException:
        await _sync(conn)
        await conn.execute(psql.SQL("ROLLBACK TO SAVEPOINT {}").format(psql.Identifier(name)))
        raise
    await conn.execute(psql.SQL("RELEASE SAVEPOINT {}").format(psql.Identifier(name)))


def pipelined(conn: Connection) -> AbstractAsyncContextManager[Any]:
    """Pipeline mode for a batch of writes: the connection's own pipeline when it is in one
    already (a :meth:`Database.transaction`: a nested ``conn.pipeline()`` would sync on exit, one
    round trip more), else a pipeline for the batch."""
    return nullcontext() if conn._pipeline is not None else conn.pipeline()


def _abandoned(conn: Connection) -> bool:
    """Whether the server closed, or wrote to, this idle connection. The gateway never LISTENs
    and reads every answer it asks for, so nothing is owed to an idle connection: anything
    readable is a termination notice or the end of the socket (a rare harmless message only costs
    a reconnection). One poll(2) with a zero timeout, no round trip: the hot path's only cost."""
    if conn.closed or conn.broken:
        return True
    try:
        socket = conn.pgconn.socket
    except psycopg.OperationalError:  # libpq already knows the connection is lost
        return True
    poller = select.poll()
    poller.register(socket, select.POLLIN)
    return bool(poller.poll(0))


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


# The SQLSTATE of a statement that refused itself (schema.sql ``paygate_refuse``): it and its
# transaction committed nothing because what it was computed for did not hold.
REFUSED = "PGR01"


def refused(error: BaseException) -> bool:
    """Whether ``error`` is a statement's refusal of itself (:data:`REFUSED`)."""
    return isinstance(error, psycopg.Error) and error.sqlstate == REFUSED


def constraint_of(error: BaseException) -> str | None:
    """The constraint (or index) a psycopg integrity error names, if any."""
    if isinstance(error, psycopg.errors.IntegrityError):
        return error.diag.constraint_name
    return None
