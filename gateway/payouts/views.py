"""What ``GET /v1/payouts/{id}`` shows (API.md, Payouts and "Shapes"): the payout with its state and
version, and its decisions, grants and attempts oldest first, plus returns as separate events.

``effect`` is seed 001's effect record (``effect_digest``, ``idempotency_key``,
``protocol_state``; gateway.effects), per attempt and for the latest attempt; ``None`` before any
attempt exists.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.timestamps import rfc3339
from gateway.payouts import attempts, recalls
from gateway.pipeline.views import attempts_view, shown
from gateway.store.db import Connection, fetch_all
from gateway.store.queries import load_queries

_DECISIONS = load_queries("gateway.payouts", "decisions.sql")
_PAYOUTS = load_queries("gateway.payouts", "payouts.sql")

DECISION_FIELDS = ("decision_id", "outcome", "reason", "policy_version", "terms_fingerprint", "actor_id",
                   "evaluated_payout_version", "observed_at")
GRANT_FIELDS = ("grant_id", "decision_id", "state", "audience", "operation", "attempt_number",
                "executable_payout_version", "terms_fingerprint", "policy_version", "not_before", "expires_at",
                "consumed_at", "revoked_at", "revoke_reason", "expired_at")
PAYOUT_FIELDS = ("payout_id", "tenant_id", "requester_id", "beneficiary_id", "destination_id", "destination_version",
                 "amount_minor", "currency", "purpose", "release_at", "state", "version")


def decision_view(row: dict[str, Any], grant: dict[str, Any] | None) -> dict[str, Any]:
    """The decision document of ``/submit`` and friends."""
    return shown(row, DECISION_FIELDS) | {
        "grant": None if grant is None else shown(grant, ("grant_id", "not_before", "expires_at", "attempt_number"))}


async def payout_view(conn: Connection, payout: dict[str, Any]) -> dict[str, Any]:
    key = {"payout_id": payout["payout_id"]}
    grants = await fetch_all(conn, _DECISIONS["grants_of_payout"], key)
    by_decision = {grant["decision_id"]: grant for grant in grants}
    decisions = await fetch_all(conn, _DECISIONS["decisions_of_payout"], key)
    events = await fetch_all(conn, _PAYOUTS["history_of_payout"], key)
    rows = await attempts.attempts_of_payout(conn, payout["payout_id"])
    shown_attempts = await attempts_view(attempts.PAYOUT, conn, rows)
    return shown(payout, PAYOUT_FIELDS) | {
        "decisions": [decision_view(row, by_decision.get(row["decision_id"])) for row in decisions],
        "grants": [grant_view(row) for row in grants],
        "attempts": shown_attempts,
        "returns": [{"attempt_id": str(e["attempt_id"]), "occurred_at": rfc3339(e["occurred_at"]), **e["detail"]}
                    for e in events if e["kind"] == "return"],
        "effect": shown_attempts[-1]["effect"] if shown_attempts else None,  # the latest attempt's
        "recalls": await recalls.recalls_view(conn, payout["payout_id"]),  # docs/decisions/0015
    }


def grant_view(row: dict[str, Any]) -> dict[str, Any]:
    return shown(row, GRANT_FIELDS)
