"""The extensions of a PaymentStatus answer (API.md, "Orders and checkout"): the attempt's seed 001
``effect`` and the order's ``refund`` summary, read in one statement."""

from __future__ import annotations

from typing import Any

from gateway.effects.views import effect_view
from gateway.refunds.views import refund_summary
from gateway.store.db import Connection, Cursor, Database
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payments", "status.sql")


async def status_extensions(db: Database, attempt_id: str, order_id: str) -> dict[str, Any]:
    """``{"effect": ..., "refund": ...}`` for the attempt and its order: what
    :func:`gateway.effects.views.effects_of` and :func:`gateway.refunds.views.refunds_of` show of
    them, from one autocommit statement (one round trip, one snapshot)."""
    row = await db.fetch_one(_SQL["status_extensions"], {"attempt_id": attempt_id, "order_id": order_id})
    return extensions_of(row)


async def send_status_extensions(conn: Connection, attempt_id: Any, order_id: str) -> Cursor:
    """The same statement queued in the caller's transaction (in pipeline mode, unread): it travels
    with the transaction's COMMIT and, once the transaction has ended, :func:`extensions_of` reads
    ``await cursor.fetchone()``. It sees the transaction's own writes."""
    return await conn.execute(_SQL["status_extensions"], {"attempt_id": attempt_id, "order_id": order_id})


def extensions_of(row: dict[str, Any] | None) -> dict[str, Any]:
    """``status_extensions``'s one row as the answer shows it."""
    if row is None:
        raise RuntimeError("status_extensions returns one row")
    refund = None
    if row["grant_id"] is not None:
        attempt = None if row["refund_attempt_id"] is None else {
            "attempt_id": row["refund_attempt_id"], "state": row["refund_state"],
            "client_reference": row["refund_client_reference"], "provider_refund_id": row["provider_refund_id"],
            "outcome_reason": row["refund_outcome_reason"]}
        refund = refund_summary({"grant_id": row["grant_id"], "refund_number": row["refund_number"],
                                 "state": row["grant_state"]},
                                {"decision_id": row["decision_id"], "cause": row["cause"]}, attempt)
    return {"effect": None if row["effect_digest"] is None else effect_view(row), "refund": refund}
