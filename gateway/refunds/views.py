"""What ``GET /v1/orders/{id}`` and the payment status show of an order's refunds
(docs/decisions/0019): every decision, grant and attempt (with its seed 001
effect), oldest first, and a one-line ``refund`` summary of the latest one. Identifiers, states and
reasons; never a token."""

from __future__ import annotations

from typing import Any

from gateway.pipeline.views import attempts_view, shown
from gateway.refunds.attempts import REFUND
from gateway.refunds.decisions import SQL
from gateway.store.db import Connection, fetch_all

DECISION_FIELDS = ("decision_id", "order_id", "operation", "cause", "outcome", "reason", "policy_version",
                   "actor_id", "evaluated_order_version", "provider_payment_id", "observed_at")
GRANT_FIELDS = ("grant_id", "decision_id", "refund_number", "state", "provider_payment_id", "not_before",
                "expires_at", "consumed_at", "expired_at")


def decision_view(decision: dict[str, Any], grant: dict[str, Any] | None) -> dict[str, Any]:
    """A refund decision as ``POST /v1/orders/{id}/refund`` answers it."""
    return shown(decision, DECISION_FIELDS) | {
        "grant": None if grant is None else shown(grant, ("grant_id", "refund_number", "not_before", "expires_at"))}


def refund_summary(grant: dict[str, Any], decision: dict[str, Any], attempt: dict[str, Any] | None) -> dict[str, Any]:
    """The one-line ``refund`` of an order: its latest grant, that grant's decision and its attempt
    if one was claimed. ``Requested`` until the attempt is claimed, then the attempt's own state
    (``Claimed``, ``Started``, ``Unknown``, ``Succeeded``, ``Failed``, ``NotStarted``,
    ``NotApplied``), or ``Expired`` for a grant that lapsed unclaimed."""
    state = attempt["state"] if attempt else ("Expired" if grant["state"] == "Expired" else "Requested")
    return {"refund_number": grant["refund_number"], "cause": decision["cause"], "state": state,
            "decision_id": str(decision["decision_id"]), "grant_id": str(grant["grant_id"]),
            "attempt_id": str(attempt["attempt_id"]) if attempt else None,
            "client_reference": attempt["client_reference"] if attempt else None,
            "provider_refund_id": attempt["provider_refund_id"] if attempt else None,
            "outcome_reason": attempt["outcome_reason"] if attempt else None}


async def refunds_of(conn: Connection, order_id: str) -> dict[str, Any]:
    """``{"refund": summary | None, "refunds": {"decisions", "grants", "attempts"}}`` for one order;
    the summary is :func:`refund_summary` of the latest grant."""
    params = {"order_id": order_id}
    decisions = await fetch_all(conn, SQL["decisions_of_order"], params)
    grants = await fetch_all(conn, SQL["grants_of_order"], params)
    attempts = await fetch_all(conn, SQL["attempts_of_order"], params)
    summary = None
    if grants:
        latest = grants[-1]
        summary = refund_summary(latest, next(d for d in decisions if d["decision_id"] == latest["decision_id"]),
                                 next((a for a in attempts if a["grant_id"] == latest["grant_id"]), None))
    return {"refund": summary, "refunds": {
        "decisions": [decision_view(d, next((g for g in grants if g["decision_id"] == d["decision_id"]), None))
                      for d in decisions],
        "grants": [shown(g, GRANT_FIELDS) for g in grants], "attempts": await attempts_view(REFUND, conn, attempts)}}
