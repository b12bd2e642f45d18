"""The refund attempt kind: the third instance of the one attempt pipeline (docs/decisions/0019).
Everything a refund does after its decision is the pipeline's
(``gateway.pipeline``: executor, reconciler, sweeper, resolution, notification application,
views); this module states only what differs for a refund:

- identity: effect kind ``payment_refund``, operation ``payment.refund``, parent ``order_id``;
- storage: ``payment_refund_attempts`` / ``payment_refund_grants``, CardCo's ``provider_refund_id``,
  evidence in ``payment_refund_history``;
- authority: the single-use grant of an Allowed refund decision, presented by
  ``svc-payment-refund-worker``, for an order that is still paid;
- the claim: under the order's row lock, the order re-read as still refundable (seed 000: the claim
  "re-asserts everything validation relied on"), then the attempt Claimed on the paid payment's own
  provider account (CardCo scopes the payment to it), reference ``<order_id>-r<N>``, key
  ``refund-<order_id>-r<N>``, the seed 001 record committed with it;
- the provider contract is the provider's (``gateway.providers``: CardCo's
  ``POST /v1/payments/{id}/refunds``, Stripe's ``POST /v1/refunds``); a record must name the
  refunded payment;
- the parent row: the order follows (``gateway.refunds.settlement.follow``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.domain import attempt_kinds, refunds
from gateway.domain.canonical import digest
from gateway.domain.effect_manifest import (
    Transport,
    refund_approval_set_document,
    refund_manifest,
    refund_policy_document,
)
from gateway.domain.effect_protocol import ProtocolState
from gateway.effects import ledger
from gateway.payouts.config import attempt_timings
from gateway.pipeline.accounts import NOT_CONFIGURED
from gateway.pipeline.effects import intent
from gateway.pipeline.grants import presented_grant
from gateway.pipeline.kind import (
    AttemptKind,
    Claimed,
    Event,
    Postponed,
    Presenter,
    Refused,
)
from gateway.pipeline.rows import Rows
from gateway.refunds.decisions import SQL, append_history
from gateway.refunds.settlement import follow
from gateway.settings import ProviderAccount, Settings
from gateway.store.db import Connection, Database, fetch_one, fetch_required

ROWS = Rows(attempt_kinds.PAYMENT_REFUND.attempts, "payment_refund_grants", "provider_refund_id",
            "one_refund_attempt_per_provider_refund")
EXECUTOR = Presenter("svc-payment-refund-worker", frozenset({refunds.AUDIENCE}))


@dataclass(frozen=True)
class RefundJob:
    """What a ``payment-refund-job`` message carries: references only."""

    order_id: str
    grant_id: str
    correlation_id: str

    def ids(self) -> dict[str, str]:
        return {"order_id": self.order_id, "grant_id": self.grant_id, "correlation_id": self.correlation_id}


async def _history(conn: Connection, order_id: str, event: Event, /, *, actor: str, now: datetime,
                   detail: dict[str, Any], attempt_id: Any = None, grant_id: Any = None,
                   correlation_id: str | None = None) -> None:
    await append_history(conn, order_id, event, actor=actor, now=now, detail=detail, attempt_id=attempt_id,
                         grant_id=grant_id, correlation_id=correlation_id)


@dataclass(frozen=True)
class Admitted:
    grant: dict[str, Any]
    order: dict[str, Any]  # with the paid payment attempt's provider account


async def _admit(db: Database, now: datetime, job: RefundJob, presenter: Presenter) -> Admitted | Refused | Postponed:
    """The grant checks of every grant-authorized kind, then: the order is still paid."""
    async with db.transaction() as conn:
        grant = await presented_grant(REFUND, conn, job.grant_id, subject_id=job.order_id, presenter=presenter,
                                      now=now)
        if isinstance(grant, (Refused, Postponed)):
            return grant
        order = await fetch_required(conn, SQL["order_to_refund"], {"order_id": job.order_id})
    if order["state"] not in refunds.REFUNDABLE:
        return Refused("order.not-refundable", grant, {"state": order["state"]})
    return Admitted(grant, order)


async def claim(db: Database, now: datetime, settings: Settings, admitted: Admitted,
                worker_id: str) -> Claimed | Refused:
    """The atomic claim: under the order's lock, the order still refundable (re-asserted, not
    trusted from the admission), the grant consumed by ``now``, the attempt Claimed on the paid
    payment's account with its seed 001 effect record, or nothing. An account no longer configured
    claims nothing (the grant lapses; a cancelled order's refund is then escalated as owed)."""
    grant, order = admitted.grant, admitted.order
    account = settings.account(order["provider_account"])
    if account is None:
        return Refused(NOT_CONFIGURED, grant)
    timings = attempt_timings(settings, account)
    order_id, number = order["order_id"], grant["refund_number"]
    async with db.transaction() as conn:
        if await fetch_one(conn, SQL["lock_refundable_order"], {
                "order_id": order_id, "refundable": sorted(refunds.REFUNDABLE)}) is None:
            return Refused("order.not-refundable", grant)
        if not await ROWS.consume_grant(conn, now, grant["grant_id"], worker_id):
            return Refused("claim.lost", grant)
        attempt = await fetch_required(conn, SQL["insert_attempt"], {
            "attempt_id": uuid.uuid4(), "order_id": order_id, "grant_id": grant["grant_id"],
            "decision_id": grant["decision_id"], "refund_number": number, "provider_account": account.id,
            "provider_payment_id": grant["provider_payment_id"],
            "client_reference": refunds.client_reference(order_id, number),
            "idempotency_key": refunds.idempotency_key(order_id, number), "amount_minor": order["amount_minor"],
            "currency": order["currency"], "worker_id": worker_id, "now": now,
            "send_deadline": timings.send_deadline(now), "lease_expires_at": timings.lease_expiry(now),
            "escalation_deadline": timings.escalation_deadline(now)})
        await _persist_effect(conn, attempt, account=account, now=now, actor=worker_id,
                              reminder_interval_s=settings.reminder_interval_s)
        await _history(conn, order_id, "transition", actor=worker_id, now=now, attempt_id=attempt["attempt_id"],
                       grant_id=grant["grant_id"], detail={"attempt_state": "Claimed", "refund_number": number,
                                                           "lease_epoch": attempt["lease_epoch"]})
    return Claimed(attempt)


async def _persist_effect(conn: Connection, attempt: dict[str, Any], *, account: ProviderAccount, now: datetime,
                          actor: str, reminder_interval_s: float) -> bool:
    """Seed 001: the claimed refund's record and the ledger of its decision (PROPOSED,
    POLICY_EVALUATED, APPROVED, INTENT_PERSISTED), from the very request the executor will send."""
    decision = await fetch_required(conn, SQL["refund_governance"], {"decision_id": attempt["decision_id"]})
    derived = intent(REFUND, attempt, account, None, policy_digest=digest(refund_policy_document(decision)),
                     approval_set_digest=digest(refund_approval_set_document(decision)))
    decision_id = str(decision["decision_id"])
    prelude: list[ledger.Step] = [
        (ProtocolState.PROPOSED, {"order_id": attempt["order_id"], "operation": decision["operation"],
                                  "cause": decision["cause"]}),
        (ProtocolState.POLICY_EVALUATED, {"decision_id": decision_id, "policy_version": decision["policy_version"]}),
        (ProtocolState.APPROVED, {"decision_id": decision_id, "actor_id": decision["actor_id"]}),
    ]
    return await ledger.persist(conn, derived, prelude=prelude, actor=actor, now=now,
                                reminder_interval_s=reminder_interval_s)


def _manifest(transport: Transport, body: dict[str, Any], attempt: dict[str, Any]) -> dict[str, Any]:
    return refund_manifest(transport, body, provider_payment_id=attempt["provider_payment_id"],
                           amount_minor=attempt["amount_minor"], currency=attempt["currency"])


REFUND = AttemptKind(
    name=attempt_kinds.PAYMENT_REFUND.name, operation=refunds.OPERATION, parent="order_id", rows=ROWS,
    history=_history, admit=_admit, claim=claim, manifest=_manifest, timings=attempt_timings,
    identity=lambda attempt, record: record.get("payment") == attempt["provider_payment_id"],
    follow=follow,
    escalation_facts=lambda attempt: {"provider_payment_id": attempt["provider_payment_id"]},
    attempt_fields=("attempt_id", "refund_number", "state", "grant_id", "decision_id", "client_reference",
                    "idempotency_key", "provider_payment_id", "provider_refund_id", "provider_status",
                    "outcome_reason", "amount_minor", "currency", "claimed_at", "started_at", "send_deadline",
                    "sends", "resolved_at"),
    evidence=SQL["effect_evidence"],
)
