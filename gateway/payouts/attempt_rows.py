"""The statements and steps a payout attempt and a recall attempt share (docs/decisions/0015,
choice 6: a recall reuses the payout pipeline's rules; seed 000 section 17, "A recall that fails
or becomes Unknown is reconciled the same way").

``attempt_rows.sql`` holds each statement once, with the tables and the provider-id column as
``psycopg.sql.Identifier`` placeholders; :class:`AttemptRows` binds them for one kind of attempt
(``attempts.ROWS``, ``recalls.ROWS``) and runs the steps whose Python is the same for both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from psycopg import sql

from gateway.store.db import Connection, Database, fetch_all, fetch_one
from gateway.store.queries import load_queries

_SHAPES = load_queries("gateway.payouts", "attempt_rows.sql")
log = structlog.get_logger("gateway.payouts")


@dataclass(frozen=True)
class AttemptRows:
    kind: str  # the log events' prefix: "payout" or "payout_recall"
    attempts: str
    grants: str
    provider_id: str  # the column holding CardCo's id of the object the attempt created
    sql: dict[str, sql.Composed] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = {"attempts": sql.Identifier(self.attempts), "grants": sql.Identifier(self.grants),
                 "provider_id": sql.Identifier(self.provider_id)}
        object.__setattr__(self, "sql", {name: sql.SQL(text).format(**names)
                                         for name, text in _SHAPES.items()})

    async def mark_started(self, db: Database, now: datetime, attempt: dict[str, Any], epoch: int,
                           record: Callable[[Connection], Awaitable[object]]) -> bool:
        """True only when the Started write is confirmed committed; any doubt means do not send.
        ``record`` writes the kind's evidence of the transition in the same transaction."""
        try:
            async with db.transaction() as conn:
                row = await fetch_one(conn, self.sql["mark_started"], {
                    "attempt_id": attempt["attempt_id"], "epoch": epoch, "now": now})
                if row is not None:
                    await record(conn)
        except Exception as error:  # noqa: BLE001 - an unconfirmed commit may have committed: do not send
            log.warning(f"{self.kind}_start_unconfirmed", payout_id=attempt["payout_id"],
                        attempt_id=str(attempt["attempt_id"]), error_type=type(error).__name__)
            return False
        return row is not None

    async def count_send(self, db: Database, now: datetime, attempt: dict[str, Any], epoch: int) -> bool:
        """Re-check ownership and the send deadline right before a send; False: do not send."""
        try:
            async with db.transaction() as conn:
                row = await fetch_one(conn, self.sql["count_send"], {
                    "attempt_id": attempt["attempt_id"], "epoch": epoch, "now": now})
        except Exception as error:  # noqa: BLE001 - unconfirmed: do not send
            log.warning(f"{self.kind}_send_unconfirmed", attempt_id=str(attempt["attempt_id"]),
                        error_type=type(error).__name__)
            return False
        return row is not None

    async def attempt_of_grant(self, conn: Connection, grant_id: Any) -> dict[str, Any] | None:
        return await fetch_one(conn, self.sql["attempt_of_grant"], {"grant_id": grant_id})

    async def lapsed_leases(self, db: Database, now: datetime, limit: int) -> list[dict[str, Any]]:
        return await db.fetch_all(self.sql["lapsed_leases"], {"now": now, "limit": limit})

    async def fence_lapsed(self, conn: Connection, now: datetime, lapsed: dict[str, Any]) -> dict[str, Any] | None:
        """Increment the epoch of a lapsed attempt; None when its owner wrote first."""
        return await fetch_one(conn, self.sql["fence_lapsed"], {
            "attempt_id": lapsed["attempt_id"], "state": lapsed["state"], "epoch": lapsed["lease_epoch"], "now": now})

    async def due_checks(self, db: Database, now: datetime, backoff: Sequence[float],
                         limit: int) -> list[dict[str, Any]]:
        async with db.transaction() as conn:
            return await fetch_all(conn, self.sql["due_checks"], {"now": now, "backoff": list(backoff), "limit": limit})

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
