"""What ``GET /v1/orders/{id}`` and the payment status show of an order's refunds
(issue 11 item 3; docs/decisions/0019): every decision, grant and attempt, oldest first, and a
one-line ``refund`` summary of the latest one. Identifiers, states and reasons; never a token."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.refunds.decisions import SQL
from gateway.store.db import Connection, fetch_all


def _rfc3339(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def decision_view(decision: dict[str, Any], grant: dict[str, Any] | None) -> dict[str, Any]:
    """A refund decision as ``POST /v1/orders/{id}/refund`` answers it."""
    return {"decision_id": str(decision["decision_id"]), "order_id": decision["order_id"],
            "operation": decision["operation"], "cause": decision["cause"], "outcome": decision["outcome"],
            "reason": decision["reason"], "policy_version": decision["policy_version"],
            "actor_id": decision["actor_id"], "evaluated_order_version": decision["evaluated_order_version"],
            "provider_payment_id": decision["provider_payment_id"],
            "observed_at": _rfc3339(decision["observed_at"]),
            "grant": None if grant is None else {
                "grant_id": str(grant["grant_id"]), "refund_number": grant["refund_number"],
                "not_before": _rfc3339(grant["not_before"]), "expires_at": _rfc3339(grant["expires_at"])}}


def grant_view(grant: dict[str, Any]) -> dict[str, Any]:
    return {"grant_id": str(grant["grant_id"]), "decision_id": str(grant["decision_id"]),
            "refund_number": grant["refund_number"], "state": grant["state"],
            "provider_payment_id": grant["provider_payment_id"], "not_before": _rfc3339(grant["not_before"]),
            "expires_at": _rfc3339(grant["expires_at"]), "consumed_at": _rfc3339(grant["consumed_at"]),
            "expired_at": _rfc3339(grant["expired_at"])}


def attempt_view(attempt: dict[str, Any]) -> dict[str, Any]:
    return {"attempt_id": str(attempt["attempt_id"]), "refund_number": attempt["refund_number"],
            "state": attempt["state"], "grant_id": str(attempt["grant_id"]),
            "decision_id": str(attempt["decision_id"]), "client_reference": attempt["client_reference"],
            "idempotency_key": attempt["idempotency_key"], "provider_payment_id": attempt["provider_payment_id"],
            "provider_refund_id": attempt["provider_refund_id"], "provider_status": attempt["provider_status"],
            "outcome_reason": attempt["outcome_reason"], "amount_minor": attempt["amount_minor"],
            "currency": attempt["currency"], "claimed_at": _rfc3339(attempt["claimed_at"]),
            "started_at": _rfc3339(attempt["started_at"]), "send_deadline": _rfc3339(attempt["send_deadline"]),
            "sends": attempt["sends"], "resolved_at": _rfc3339(attempt["resolved_at"])}


async def refunds_of(conn: Connection, order_id: str) -> dict[str, Any]:
    """``{"refund": summary | None, "refunds": {"decisions", "grants", "attempts"}}`` for one order.

    The summary follows the latest grant: ``Requested`` until its attempt is claimed, then the
    attempt's own state (``Claimed``, ``Started``, ``Unknown``, ``Succeeded``, ``Failed``,
    ``NotStarted``, ``NotApplied``), or ``Expired`` for a grant that lapsed unclaimed."""
    params = {"order_id": order_id}
    decisions = await fetch_all(conn, SQL["decisions_of_order"], params)
    grants = await fetch_all(conn, SQL["grants_of_order"], params)
    attempts = await fetch_all(conn, SQL["attempts_of_order"], params)
    summary = None
    if grants:
        latest = grants[-1]
        attempt = next((a for a in attempts if a["grant_id"] == latest["grant_id"]), None)
        decision = next(d for d in decisions if d["decision_id"] == latest["decision_id"])
        state = attempt["state"] if attempt else ("Expired" if latest["state"] == "Expired" else "Requested")
        summary = {"refund_number": latest["refund_number"], "cause": decision["cause"], "state": state,
                   "decision_id": str(decision["decision_id"]), "grant_id": str(latest["grant_id"]),
                   "attempt_id": str(attempt["attempt_id"]) if attempt else None,
                   "client_reference": attempt["client_reference"] if attempt else None,
                   "provider_refund_id": attempt["provider_refund_id"] if attempt else None,
                   "outcome_reason": attempt["outcome_reason"] if attempt else None}
    return {"refund": summary, "refunds": {
        "decisions": [decision_view(d, next((g for g in grants if g["decision_id"] == d["decision_id"]), None))
                      for d in decisions],
        "grants": [grant_view(g) for g in grants], "attempts": [attempt_view(a) for a in attempts]}}
