"""What ``GET /v1/payouts/{id}`` shows (API.md, Payouts and "Shapes"): the payout with its state and
version, and its decisions, grants and attempts oldest first, plus returns as separate events.

``effect`` is seed 001's effect record (``effect_digest``, ``idempotency_key``,
``protocol_state``; gateway.effects), per attempt and for the latest attempt; ``None`` before any
attempt exists.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.effects.views import effects_of
from gateway.payouts import attempts, recalls
from gateway.store.db import Connection, fetch_all
from gateway.store.queries import load_queries

_DECISIONS = load_queries("gateway.payouts", "decisions.sql")
_PAYOUTS = load_queries("gateway.payouts", "payouts.sql")


def rfc3339(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def decision_view(row: dict[str, Any], grant: dict[str, Any] | None) -> dict[str, Any]:
    """The decision document of ``/submit`` and friends."""
    return {
        "decision_id": str(row["decision_id"]), "outcome": row["outcome"], "reason": row["reason"],
        "policy_version": row["policy_version"], "terms_fingerprint": row["terms_fingerprint"],
        "actor_id": row["actor_id"], "evaluated_payout_version": row["evaluated_payout_version"],
        "observed_at": rfc3339(row["observed_at"]), "grant": None if grant is None else {
            "grant_id": str(grant["grant_id"]), "not_before": rfc3339(grant["not_before"]),
            "expires_at": rfc3339(grant["expires_at"]), "attempt_number": grant["attempt_number"]},
    }


def grant_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "grant_id": str(row["grant_id"]), "decision_id": str(row["decision_id"]), "state": row["state"],
        "audience": row["audience"], "operation": row["operation"], "attempt_number": row["attempt_number"],
        "executable_payout_version": row["executable_payout_version"], "terms_fingerprint": row["terms_fingerprint"],
        "policy_version": row["policy_version"], "not_before": rfc3339(row["not_before"]),
        "expires_at": rfc3339(row["expires_at"]), "consumed_at": rfc3339(row["consumed_at"]),
        "revoked_at": rfc3339(row["revoked_at"]), "revoke_reason": row["revoke_reason"],
        "expired_at": rfc3339(row["expired_at"]),
    }


def attempt_view(row: dict[str, Any], effect: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "attempt_id": str(row["attempt_id"]), "attempt_number": row["attempt_number"], "state": row["state"],
        "grant_id": str(row["grant_id"]), "decision_id": str(row["decision_id"]),
        "client_reference": row["client_reference"], "idempotency_key": row["idempotency_key"],
        "amount_minor": row["amount_minor"], "currency": row["currency"], "claimed_at": rfc3339(row["claimed_at"]),
        "started_at": rfc3339(row["started_at"]), "send_deadline": rfc3339(row["send_deadline"]),
        "sends": row["sends"], "provider_payout_id": row["provider_payout_id"],
        "provider_status": row["provider_status"], "outcome_reason": row["outcome_reason"],
        "resolved_at": rfc3339(row["resolved_at"]),
        "effect": effect,  # seed 001's per-attempt effect record (issue 8)
    }


async def payout_view(conn: Connection, payout: dict[str, Any]) -> dict[str, Any]:
    key = {"payout_id": payout["payout_id"]}
    grants = await fetch_all(conn, _DECISIONS["grants_of_payout"], key)
    by_decision = {grant["decision_id"]: grant for grant in grants}
    decisions = await fetch_all(conn, _DECISIONS["decisions_of_payout"], key)
    events = await fetch_all(conn, _PAYOUTS["history_of_payout"], key)
    rows = await attempts.attempts_of_payout(conn, payout["payout_id"])
    effects = await effects_of(conn, [row["attempt_id"] for row in rows])
    return {
        "payout_id": payout["payout_id"], "tenant_id": payout["tenant_id"], "requester_id": payout["requester_id"],
        "beneficiary_id": payout["beneficiary_id"], "destination_id": payout["destination_id"],
        "destination_version": payout["destination_version"], "amount_minor": payout["amount_minor"],
        "currency": payout["currency"], "purpose": payout["purpose"], "release_at": rfc3339(payout["release_at"]),
        "state": payout["state"], "version": payout["version"],
        "decisions": [decision_view(row, by_decision.get(row["decision_id"])) for row in decisions],
        "grants": [grant_view(row) for row in grants],
        "attempts": [attempt_view(row, effects.get(str(row["attempt_id"]))) for row in rows],
        "returns": [{"attempt_id": str(e["attempt_id"]), "occurred_at": rfc3339(e["occurred_at"]), **e["detail"]}
                    for e in events if e["kind"] == "return"],
        "effect": effects.get(str(rows[-1]["attempt_id"])) if rows else None,  # the latest attempt's (issue 8)
        "recalls": await recalls.recalls_view(conn, payout["payout_id"]),  # docs/decisions/0015
    }
