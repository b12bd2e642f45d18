"""Append-only payout evidence (seed 000, "Execution Evidence Is Separate From the Decision"):
decisions, transitions, deliveries, provider observations, reconciliations and returns. History
is what auditors read; the payout, grant and attempt rows are projections workers act on."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from psycopg.types.json import Jsonb

from gateway.store.db import Connection
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "payouts.sql")

Kind = Literal["decision", "transition", "delivery", "provider_observation", "reconciliation", "return",
               "acknowledgment", "recall"]


async def append(conn: Connection, payout_id: str, kind: Kind, *, actor: str, now: datetime,
                 detail: dict[str, Any], attempt_id: UUID | None = None, decision_id: UUID | None = None,
                 grant_id: UUID | None = None, correlation_id: str | None = None) -> None:
    """Append one event in the caller's transaction, so it commits with the change it records."""
    await conn.execute(_SQL["append_history"], {
        "payout_id": payout_id, "attempt_id": attempt_id, "decision_id": decision_id, "grant_id": grant_id,
        "kind": kind, "now": now, "actor": actor, "correlation_id": correlation_id,
        "detail": Jsonb({key: value for key, value in detail.items() if value is not None}),
    })
