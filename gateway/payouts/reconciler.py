"""The read-only payout reconciler (seed 000, "Reconcile Before Any New Attempt").

For each due attempt (Unknown, or accepted and awaiting a status check), oldest first, on the
lookup backoff: look the *attempt* up by its client reference with the payout account's own
credentials, verify the record's destination (by digest), amount, currency and reference, then:
completed -> Succeeded; rejected -> Failed; still processing -> leave; returned -> Succeeded plus
a separate return event; a mismatching or ambiguous record -> escalate, leave Unknown; not found
-> leave Unknown unless all three of the seed's conditions hold (``not_applied_allowed``), then
NotApplied. Past the escalation deadline an unresolved attempt is escalated. It never resends.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog

from gateway.clock import Clock
from gateway.domain.payout_outcomes import (
    MISMATCH,
    AttemptState,
    Classification,
    Expected,
    classify_record,
)
from gateway.domain.payout_timing import not_applied_allowed
from gateway.effects.certify import Certifier
from gateway.payouts import attempts, history
from gateway.payouts.cardco import CardCoPayouts
from gateway.payouts.config import payout_timings
from gateway.payouts.escalations import escalate
from gateway.settings import Settings
from gateway.store.db import Connection, Database

ACTOR = "payout-reconciler"
BATCH = 50
METHOD = "lookup:client_reference"
log = structlog.get_logger("gateway.payouts")


class Reconciler:
    def __init__(self, db: Database, clock: Clock, settings: Settings) -> None:
        self.db = db
        self.clock = clock
        self.settings = settings
        self.timings = payout_timings(settings)
        self.provider = CardCoPayouts.of(settings, clock)

    async def run_once(self) -> int:
        due = await attempts.due_checks(self.db, self.clock.now(), self.timings.lookup_backoff_s, BATCH)
        for attempt in due:
            await self.reconcile(attempt)
        return len(due)

    async def reconcile(self, attempt: dict[str, Any]) -> None:
        lookup_started_at = self.clock.now()  # condition (3): when *this* lookup began
        found = await self.provider.lookup(attempt["client_reference"])
        now = self.clock.now()
        async with self.db.transaction() as conn:
            await history.append(conn, attempt["payout_id"], "reconciliation", actor=ACTOR, now=now,
                                 attempt_id=attempt["attempt_id"],
                                 detail={"method": METHOD, "records": None if found is None else len(found),
                                         "lookup_started_at": lookup_started_at.isoformat()})
            resolved = await self._apply(conn, now, attempt, found, lookup_started_at)
            if not resolved and now >= attempt["escalation_deadline"]:
                await self._escalate(conn, now, attempt, "deadline")

    async def _apply(self, conn: Connection, now: datetime, attempt: dict[str, Any], found: list[dict[str, Any]] | None,
                     lookup_started_at: datetime) -> bool:
        """Write what the lookup established; True when the attempt is resolved by it."""
        if found is None:  # the lookup failed: nothing learned
            return False
        if not found:
            cutoff = self.timings.not_applied_cutoff(attempt["send_deadline"])
            if attempt["state"] != AttemptState.UNKNOWN.value or not not_applied_allowed(lookup_started_at, cutoff):
                return False
            return await self._resolve(conn, now, attempt, AttemptState.NOT_APPLIED, "reconciled.not-found", None)
        classification = self._verify(attempt, found)
        if classification.row is MISMATCH:
            await self._escalate(conn, now, attempt, "mismatch", classification.provider_payout_id)
            return False
        if classification.state not in (AttemptState.SUCCEEDED, AttemptState.FAILED):
            return False  # still processing, or a status no row documents: look again later
        return await self._resolve(conn, now, attempt, classification.state, classification.reason, classification)

    def _verify(self, attempt: dict[str, Any], found: list[dict[str, Any]]) -> Classification:
        """One record, for this attempt's destination, amount, currency and reference."""
        if len(found) != 1 or found[0].get("destination_digest") != attempt["destination_digest"]:
            return Classification(MISMATCH, provider_payout_id=found[0].get("id") if len(found) == 1 else None)
        expected = Expected(attempt["client_reference"], attempt["amount_minor"], attempt["currency"])
        return classify_record(found[0], expected)

    async def _resolve(self, conn: Connection, now: datetime, attempt: dict[str, Any], state: AttemptState, reason: str,
                       classification: Classification | None) -> bool:
        written = await attempts.resolve(
            conn, now, attempt, state, reason, actor=ACTOR,
            from_states=[AttemptState.UNKNOWN, AttemptState.STARTED],
            provider_payout_id=classification.provider_payout_id if classification else None,
            provider_status=classification.provider_status if classification else None,
            certifier=Certifier.of(self.settings))  # seed 001 (issue 8)
        return written is not None

    async def _escalate(self, conn: Connection, now: datetime, attempt: dict[str, Any], cause: str,
                        provider_payout_id: str | None = None) -> None:
        """Payments operations own what reconciliation cannot resolve (seed 000, section 2)."""
        await escalate(conn, now, attempt, cause, reason=f"payout-{cause}",
                       reminder_interval_s=self.settings.reminder_interval_s,
                       provider_payout_id=provider_payout_id or attempt["provider_payout_id"])
