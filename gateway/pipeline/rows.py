"""The attempt table of one kind, bound to the statements every kind shares (``rows.sql``).

``rows.sql`` holds each statement once, with the tables and the provider-id column as
``psycopg.sql.Identifier`` placeholders; :class:`Rows` binds them for one kind's tables. A kind
without grants (authority that is not a seed 000 grant) passes ``grants=None`` and never runs the
grant statements. ``provider_id_index`` names the kind's unique index on (provider account,
provider id): its violation is translated here, by that name, into
:class:`~gateway.domain.outcomes.ProviderIdClaimed` (STYLE, example 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from gateway.domain.outcomes import ProviderIdClaimed
from gateway.store.db import Connection, Database, constraint_of, fetch_all, fetch_one, savepoint
from gateway.store.queries import load_queries

_SHAPES = load_queries("gateway.pipeline", "rows.sql")


@dataclass(frozen=True)
class Rows:
    attempts: str  # the kind's attempt table
    grants: str | None  # its single-use grants, or None for a kind authorized otherwise
    provider_id: str  # the column holding CardCo's id of the object the attempt created
    provider_id_index: str  # the unique index of that id per provider account (seed 004)
    sql: dict[str, sql.Composed] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = {"attempts": sql.Identifier(self.attempts), "provider_id": sql.Identifier(self.provider_id),
                 **({"grants": sql.Identifier(self.grants)} if self.grants else {})}
        object.__setattr__(self, "sql", {name: sql.SQL(text).format(**names) for name, text in _SHAPES.items()
                                         if self.grants or "{grants}" not in text})

    async def attempt_of_grant(self, conn: Connection, grant_id: Any) -> dict[str, Any] | None:
        return await fetch_one(conn, self.sql["attempt_of_grant"], {"grant_id": grant_id})

    async def consume_grant(self, conn: Connection, now: datetime, grant_id: Any, worker_id: str) -> bool:
        """Single use: only an Issued grant inside its window, by the one clock's now."""
        return await fetch_one(conn, self.sql["consume_grant"], {
            "grant_id": grant_id, "now": now, "worker_id": worker_id}) is not None

    async def resolve(self, conn: Connection, attempt: dict[str, Any], params: dict[str, Any]) -> dict[str, Any] | None:
        """``resolve_attempt`` in the caller's transaction; None when the attempt was not as
        observed. Raises ProviderIdClaimed when the id it would record is another attempt's: the
        write runs in a savepoint then, so the caller's transaction survives to escalate."""
        adds_nothing = params["provider_id"] is None or params["provider_id"] == attempt[self.provider_id]
        if adds_nothing:  # no id to add: the index cannot refuse it, no savepoint needed
            return await fetch_one(conn, self.sql["resolve_attempt"], params)
        try:
            async with savepoint(conn, "record_provider_id"):
                return await fetch_one(conn, self.sql["resolve_attempt"], params)
        except psycopg.errors.UniqueViolation as error:
            if constraint_of(error) != self.provider_id_index:
                raise
            raise ProviderIdClaimed(params["provider_id"]) from None

    async def lock(self, conn: Connection, attempt_id: Any) -> dict[str, Any] | None:
        return await fetch_one(conn, self.sql["lock_attempt"], {"attempt_id": attempt_id})

    async def lapsed_leases(self, db: Database, now: datetime, limit: int) -> list[dict[str, Any]]:
        return await db.fetch_all(self.sql["lapsed_leases"], {"now": now, "limit": limit})

    async def fence_lapsed(self, conn: Connection, now: datetime, lapsed: dict[str, Any]) -> dict[str, Any] | None:
        """Increment the epoch of a lapsed attempt; None when its owner wrote first."""
        return await fetch_one(conn, self.sql["fence_lapsed"], {
            "attempt_id": lapsed["attempt_id"], "state": lapsed["state"], "epoch": lapsed["lease_epoch"], "now": now})

    async def due_accounts(self, db: Database, now: datetime, limit: int) -> list[tuple[str, int]]:
        """(provider account, due checks, at most ``limit``) of every account not paused, the one
        with the oldest due check first."""
        rows = await db.fetch_all(self.sql["due_accounts"], {"now": now, "limit": limit})
        return [(row["provider_account"], row["due"]) for row in rows]

    async def overdue_unescalated(self, conn: Connection, now: datetime, deadline_key: str,
                                  limit: int) -> list[dict[str, Any]]:
        """Unresolved, unowned attempts past their escalation deadline never escalated for it,
        locked (rows.sql ``overdue_unescalated``)."""
        return await fetch_all(conn, self.sql["overdue_unescalated"], {
            "now": now, "deadline_key": deadline_key, "limit": limit})

    async def due_checks(self, db: Database, now: datetime, backoff: Sequence[float], limit: int,
                         provider_account: str) -> list[dict[str, Any]]:
        async with db.transaction() as conn:
            return await fetch_all(conn, self.sql["due_checks"], {
                "now": now, "backoff": list(backoff), "limit": limit, "provider_account": provider_account})

    async def defer_checks(self, db: Database, now: datetime, claimed: Sequence[dict[str, Any]]) -> None:
        """Make claimed checks due again, uncounted (rows.sql ``defer_checks``)."""
        if claimed:
            async with db.connection() as conn:
                await conn.execute(self.sql["defer_checks"], {
                    "now": now, "attempt_ids": [row["attempt_id"] for row in claimed],
                    "checks": [row["checks"] for row in claimed]})

    async def lock_attempt(self, conn: Connection, provider_account: str, *, client_reference: str | None,
                           provider_id: str | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The attempts a notification names by reference and by provider id, each locked, each None
        when that identifier is absent or matches nothing."""
        by_reference = None if client_reference is None else await fetch_one(
            conn, self.sql["lock_attempt_by_reference"],
            {"provider_account": provider_account, "client_reference": client_reference})
        by_provider_id = None if provider_id is None else await fetch_one(
            conn, self.sql["lock_attempt_by_provider_id"],
            {"provider_account": provider_account, "provider_id": provider_id})
        return by_reference, by_provider_id
