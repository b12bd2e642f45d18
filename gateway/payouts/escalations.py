"""Raising a payout attempt's escalation (seed 000, section 2: payments operations own what
reconciliation cannot resolve; seed 004, "Escalations": one key per distinct problem).

Keys are ``payout-attempt:<attempt_id>:<problem>`` (``gateway.effects.ledger.escalation_key``), so
the resolution that settles the attempt closes them all (``attempts.resolve``). The attempt is
named in ``details``: the escalation's ``attempt_id`` column references checkout attempts only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog

from gateway.effects.ledger import escalation_key
from gateway.escalations.store import raise_escalation
from gateway.store.db import Connection

log = structlog.get_logger("gateway.payouts")


async def escalate(conn: Connection, now: datetime, attempt: dict[str, Any], problem: str, *, reason: str,
                   reminder_interval_s: float, key_prefix: str | None = None, **facts: Any) -> int | None:
    """Open the episode (once while it is open); identifiers only, never a token or credential.
    ``key_prefix``: another attempt kind's prefix (a recall's ``payout-recall-attempt:<id>:``)."""
    details = {"attempt_id": str(attempt["attempt_id"]), "payout_id": attempt["payout_id"],
               "client_reference": attempt["client_reference"],
               "provider_payout_id": attempt["provider_payout_id"]} | facts
    raised = await raise_escalation(conn, escalation_key=(key_prefix + problem) if key_prefix
                                    else escalation_key("payout", attempt["attempt_id"], problem),
                                    reason=reason, now=now, reminder_interval_s=reminder_interval_s, details=details)
    log.warning("payout_escalated", reason=reason, payout_id=attempt["payout_id"],
                attempt_id=str(attempt["attempt_id"]))
    return raised
