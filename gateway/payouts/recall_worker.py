"""The recall executor, reconciler and sweeper (docs/decisions/0015, choice 6): the payout
pipeline's rules applied to ``payout_recall_attempts`` (seed 000 sections 8-13 and 17: "A recall
that fails or becomes Unknown is reconciled the same way").

Executor: validate the grant (unknown, binding, audience, consumed, expired, not yet valid, the
payout still Paid), claim atomically, confirm Started, then send ``POST /v1/payouts/{id}/recalls``
with ``expires_at`` = the send deadline, classify with the versioned recall table
(``payout_outcomes.RECALL_STATUS_TABLE``; 429 -> bounded same-key resend, no answer -> Unknown),
and record; the recall claim commits the attempt's seed 001 effect record and every send passes
the send gate first (gateway/effects/recalls.py). Reconciler: look the recall *attempt* up by
``<payout_id>-r<N>``; completed, failed -> resolved; not found -> NotApplied only under the same
three conditions as a payout; never resends.
Sweeper: a lapsed lease is fenced; Claimed -> NotStarted (never sent), Started -> Unknown.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from gateway.clock import Clock
from gateway.domain.payout_outcomes import MISMATCH, RECALL_STATUS_TABLE, AttemptState, Classification, classify
from gateway.domain.payout_timing import not_applied_allowed
from gateway.effects.certify import Certifier
from gateway.effects.gate import SendGate
from gateway.effects.recalls import open_recall_send, persist_recall
from gateway.payouts import recalls, records
from gateway.payouts.cardco import CardCoPayouts, CredentialUnavailable
from gateway.payouts.config import payout_account, payout_timings
from gateway.payouts.executor import send_bounded
from gateway.payouts.validation import PayoutJob, Postponed, Presenter
from gateway.settings import Settings
from gateway.store.db import Database

RECALL_EXECUTOR = Presenter("svc-payout-recall-worker", frozenset({recalls.AUDIENCE}))
RECONCILER = "payout-recall-reconciler"
SWEEPER = "payout-recall-sweeper"
BATCH = 50
log = structlog.get_logger("gateway.payouts")


@dataclass(frozen=True)
class RecallExecutor:
    db: Database
    clock: Clock
    settings: Settings
    presenter: Presenter = RECALL_EXECUTOR

    async def run(self, job: PayoutJob) -> Postponed | str:
        """Handle one delivery; the stopping or resulting code, or Postponed (redeliver later)."""
        checked = await self._validate(job)
        if not isinstance(checked, tuple):
            if not isinstance(checked, Postponed):
                log.warning("payout_recall_delivery_refused", code=checked, payout_id=job.payout_id,
                            grant_id=job.grant_id, correlation_id=job.correlation_id)
            return checked
        grant, payout = checked
        timings = payout_timings(self.settings)
        try:
            attempt = await recalls.claim(
                self.db, self.clock.now(), timings, grant=grant, payout=payout, worker_id=self.presenter.service_id,
                provider_account=payout_account(self.settings).id,
                record_effect=lambda conn, claimed: persist_recall(  # seed 001 (issue 8)
                    conn, claimed, account=payout_account(self.settings), now=self.clock.now(),
                    actor=self.presenter.service_id, reminder_interval_s=self.settings.reminder_interval_s))
        except Exception as error:  # noqa: BLE001 - the commit may have happened: never send
            log.warning("payout_recall_claim_unconfirmed", error_type=type(error).__name__, grant_id=job.grant_id)
            return "claim.unconfirmed"
        if attempt is None:
            return "claim.lost"
        epoch = attempt["lease_epoch"]
        provider = CardCoPayouts.of(self.settings, self.clock)
        try:
            key = provider.credential()
        except CredentialUnavailable:
            await self._resolve(attempt, epoch, AttemptState.NOT_STARTED, "credential.unavailable",
                                AttemptState.CLAIMED, None)
            return "credential.unavailable"
        if not await recalls.mark_started(self.db, self.clock.now(), attempt, epoch):
            return "start.unconfirmed"

        async def counted(send: int) -> bool:
            return await recalls.count_send(self.db, self.clock.now(), attempt, epoch)

        async def send_once() -> Classification | str:
            # Seed 001 (issue 8): every recall send re-derives the effect digest from the request it carries.
            refused = await open_recall_send(SendGate(self.db, self.clock, self.settings.reminder_interval_s),
                                             attempt, provider.account, actor=self.presenter.service_id)
            if refused is not None:
                await self._resolve(attempt, epoch, AttemptState.UNKNOWN, f"request.not-buildable.{refused}",
                                    AttemptState.STARTED, None)
                return f"request.not-buildable.{refused}"
            return classify(await provider.recall(attempt, key), recalls.expected(attempt), RECALL_STATUS_TABLE)

        async def observe(classification: Classification, send: int) -> None:
            async with self.db.transaction() as conn:
                await recalls.record_event(conn, attempt["payout_id"], "provider_observation",
                                           actor=self.presenter.service_id, now=self.clock.now(),
                                           recall_attempt_id=attempt["attempt_id"], send=send,
                                           reason=classification.reason, attempt_state=classification.state.value,
                                           classification_table=classification.table,
                                           provider_recall_id=classification.provider_payout_id,
                                           provider_status=classification.provider_status)

        classification = await send_bounded(self.clock, counted, send_once, observe)
        if isinstance(classification, str):
            return classification
        if classification.row.resend:  # sends exhausted: Started; the reconciler follows
            return classification.reason
        await self._resolve(attempt, epoch, classification.state, classification.reason, AttemptState.STARTED,
                            classification)
        return classification.state.value

    async def _validate(self, job: PayoutJob) -> tuple[dict[str, Any], dict[str, Any]] | Postponed | str:
        now = self.clock.now()
        try:
            grant_id = uuid.UUID(job.grant_id)
        except ValueError:
            return "grant.unknown"
        async with self.db.transaction() as conn:
            grant = await recalls.get_grant(conn, grant_id)
            if grant is None:
                return "grant.unknown"
            if grant["payout_id"] != job.payout_id:
                return "binding.mismatch"
            if grant["operation"] != recalls.OPERATION or grant["audience"] not in self.presenter.audiences:
                return "presenter.not-audience"
            if grant["state"] == "Consumed":
                return "grant.consumed"
            if grant["state"] == "Expired" or now >= grant["expires_at"]:
                return "grant.expired"
            if now < grant["not_before"]:
                return Postponed("grant.not-yet-valid", grant["not_before"])
            payout = await records.get_payout(conn, job.payout_id, grant["tenant_id"])
        if payout["state"] != "Paid":
            return "payout.not-recallable"
        return grant, payout

    async def _resolve(self, attempt: dict[str, Any], epoch: int, state: AttemptState, reason: str,
                       from_state: AttemptState, classification: Classification | None) -> None:
        now = self.clock.now()
        unresolved = state in (AttemptState.STARTED, AttemptState.UNKNOWN)
        try:
            async with self.db.transaction() as conn:
                written = await recalls.resolve(
                    conn, now, attempt, state, reason, actor=self.presenter.service_id, from_states=[from_state],
                    epoch=epoch, provider_recall_id=classification.provider_payout_id if classification else None,
                    provider_status=classification.provider_status if classification else None,
                    next_check_at=payout_timings(self.settings).next_check(now, 0) if unresolved else None,
                    certifier=Certifier.of(self.settings))  # seed 001 (issue 8)
        except Exception as error:  # noqa: BLE001 - the lease lapses and the sweeper records Unknown
            log.warning("payout_recall_record_failed", attempt_id=str(attempt["attempt_id"]),
                        error_type=type(error).__name__)
            return
        if written is None:
            log.warning("payout_recall_record_fenced", attempt_id=str(attempt["attempt_id"]), lease_epoch=epoch)


class RecallReconciler:
    def __init__(self, db: Database, clock: Clock, settings: Settings) -> None:
        self.db = db
        self.clock = clock
        self.settings = settings
        self.timings = payout_timings(settings)
        self.provider = CardCoPayouts.of(settings, clock)

    async def run_once(self) -> int:
        due = await recalls.due_checks(self.db, self.clock.now(), self.timings.lookup_backoff_s, BATCH)
        for attempt in due:
            await self.reconcile(attempt)
        return len(due)

    async def reconcile(self, attempt: dict[str, Any]) -> None:
        lookup_started_at = self.clock.now()
        found = await self.provider.lookup_recalls(attempt["client_reference"])
        now = self.clock.now()
        async with self.db.transaction() as conn:
            await recalls.record_event(conn, attempt["payout_id"], "reconciliation", actor=RECONCILER, now=now,
                                       recall_attempt_id=attempt["attempt_id"], method="lookup:client_reference",
                                       records=None if found is None else len(found),
                                       lookup_started_at=lookup_started_at.isoformat())
            state, reason, seen = self._establish(attempt, found, lookup_started_at)
            if seen is not None and seen.row is MISMATCH:
                await recalls.raise_escalation(conn, now, attempt, "mismatch",
                                               reminder_interval_s=self.settings.reminder_interval_s)
            resolved = state is not None and await recalls.resolve(
                conn, now, attempt, state, reason, actor=RECONCILER,
                from_states=[AttemptState.UNKNOWN, AttemptState.STARTED],
                provider_recall_id=seen.provider_payout_id if seen else None,
                provider_status=seen.provider_status if seen else None,
                certifier=Certifier.of(self.settings)) is not None  # seed 001 (issue 8)
            if not resolved and now >= attempt["escalation_deadline"]:
                await recalls.raise_escalation(conn, now, attempt, "deadline",
                                               reminder_interval_s=self.settings.reminder_interval_s)

    def _establish(self, attempt: dict[str, Any], found: list[dict[str, Any]] | None, lookup_started_at: datetime
                   ) -> tuple[AttemptState | None, str, Classification | None]:
        """What the lookup proves: a final state to write, or None (look again later)."""
        if found is None:
            return None, "", None
        if not found:
            cutoff = self.timings.not_applied_cutoff(attempt["send_deadline"])
            if attempt["state"] == AttemptState.UNKNOWN.value and not_applied_allowed(lookup_started_at, cutoff):
                return AttemptState.NOT_APPLIED, "reconciled.not-found", None
            return None, "", None
        if len(found) != 1 or found[0].get("payout") != attempt["provider_payout_id"]:
            return None, "", Classification(MISMATCH)
        seen = recalls.classify_recall(found[0], attempt)
        if seen.state in (AttemptState.SUCCEEDED, AttemptState.FAILED):
            return seen.state, seen.reason, seen
        return None, "", seen


async def sweep_recalls(db: Database, clock: Clock) -> int:
    """Fence lapsed recall leases: Claimed -> NotStarted (never sent), Started -> Unknown."""
    now = clock.now()
    fenced = 0
    for lapsed in await recalls.lapsed_leases(db, now, BATCH):
        async with db.transaction() as conn:
            row = await recalls.fence_lapsed(conn, now, lapsed)
            if row is None:
                continue
            state = AttemptState.NOT_STARTED if row["state"] == "Claimed" else AttemptState.UNKNOWN
            await recalls.resolve(conn, now, row, state, "lease.lapsed", actor=SWEEPER,
                                  from_states=[AttemptState(row["state"])], next_check_at=now)
            fenced += 1
    return fenced
