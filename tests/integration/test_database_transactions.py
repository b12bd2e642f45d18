"""Database.transaction, db.savepoint and db.pipelined (docs/decisions/0031): BEGIN and
COMMIT queued in the transaction's pipeline, never synced on their own; the semantics of a
transaction unchanged (all or nothing, errors surface, the connection goes back to the pool clean)."""

from __future__ import annotations

import asyncio
import select

import psycopg
import pytest

from gateway.store.db import Database, fetch_one, pipelined, savepoint

_PROVIDER = ("INSERT INTO provider_accounts (provider_account, provider, environment, registered_at) "
             "VALUES (%(id)s, 'cardco', 'test', now())")


async def accounts(db: Database) -> list[str]:
    rows = await db.fetch_all("SELECT provider_account FROM provider_accounts ORDER BY provider_account")
    return [row["provider_account"] for row in rows]


async def test_a_write_never_read_that_fails_rolls_the_whole_transaction_back(db: Database) -> None:
    """A failing statement whose result nobody reads still fails the transaction (at the final
    sync), its earlier writes are rolled back, and the pooled connection is usable afterwards."""
    with pytest.raises(psycopg.errors.UniqueViolation):
        async with db.transaction() as conn:
            await conn.execute(_PROVIDER, {"id": "cardco:acct_a:test"})
            await conn.execute(_PROVIDER, {"id": "cardco:acct_a:test"})  # never read
    assert await accounts(db) == []
    for _ in range(db.pool.max_size + 1):  # every pooled connection is idle and clean again
        async with db.transaction() as conn:
            assert await fetch_one(conn, "SELECT 1 AS one") == {"one": 1}


async def test_a_failed_write_whose_answer_came_before_the_commit_still_raises_its_own_error(db: Database) -> None:
    """The flake seen under load: when the server has already answered the failing write by the
    time the block ends, psycopg's pipeline exit raises that error and then, from its final fetch,
    PipelineAborted for the queued COMMIT, which replaces it. Callers classify errors by type
    (retry on a deadlock, a constraint's name), so the transaction raises the write's own error
    whenever the server's answers arrive."""
    with pytest.raises(psycopg.errors.UniqueViolation):
        async with db.transaction() as conn:
            await conn.execute(_PROVIDER, {"id": "cardco:acct_e:test"})
            await conn.execute(_PROVIDER, {"id": "cardco:acct_e:test"})  # never read
            # Wait until the server's answer to the failing write is readable (no deadline).
            await asyncio.get_running_loop().run_in_executor(
                None, select.select, [conn.pgconn.socket], [], [], 5.0)
    assert await accounts(db) == []


async def test_an_error_in_python_rolls_back_writes_not_read_yet(db: Database) -> None:
    with pytest.raises(RuntimeError):
        async with db.transaction() as conn:
            await conn.execute(_PROVIDER, {"id": "cardco:acct_b:test"})
            raise RuntimeError("the block failed")
    assert await accounts(db) == []


async def test_a_savepoint_rolls_back_only_its_own_writes(db: Database) -> None:
    """db.savepoint inside the pipeline: a database error inside it (read or not) goes back to
    where it began; the transaction's earlier and later writes commit."""
    async with db.transaction() as conn:
        await conn.execute(_PROVIDER, {"id": "cardco:acct_c:test"})
        with pytest.raises(psycopg.errors.UniqueViolation):
            async with savepoint(conn):
                await conn.execute(_PROVIDER, {"id": "cardco:acct_d:test"})
                await fetch_one(conn, _PROVIDER + " RETURNING provider_account", {"id": "cardco:acct_c:test"})
        async with pipelined(conn):
            await conn.execute(_PROVIDER, {"id": "cardco:acct_e:test"})
    assert await accounts(db) == ["cardco:acct_c:test", "cardco:acct_e:test"]

