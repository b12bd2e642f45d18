"""Refund decisions and their single-use grants (docs/decisions/0019; seed 000 section 17: a
compensation has "its own request, its own decision, its own authority").

One operation, two callers, one rule (``gateway.domain.refunds.decide``):
- the payment writer, in the transaction that records a success on a ``CancelRequested`` order
  (cause ``paid-after-cancel``, actor ``system:cancellation``), so the refund cannot be lost between
  learning of the payment and deciding to give the money back;
- ``POST /v1/orders/{id}/refund`` (cause ``merchant-request``, actor ``merchant:<id>``).

An Allowed decision commits with its grant (audience ``payment-refund-executor``, refund number N
allocated here under the order's ``payment_refunds`` row lock) and the outbox row that publishes
the job (kind ``payment-refund-job``, references only): a crash after the commit loses nothing,
and nothing is sent before it. A paid-after-cancel decision that is not Allowed leaves the money
taken with no refund under way, which the refund sweep escalates (``gateway.refunds.settlement``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from psycopg.types.json import Jsonb

from gateway.clock import Clock
from gateway.domain import refunds
from gateway.domain.errors import OrderNotFound
from gateway.escalations.store import raise_escalation, resolve_by_key
from gateway.outbox.store import enqueue
from gateway.redelivery.republish import grant_jobs
from gateway.settings import Settings
from gateway.store.db import Connection, Database, fetch_all, fetch_one, fetch_required
from gateway.store.queries import load_queries

SQL = load_queries("gateway.refunds", "refunds.sql")
# Refund jobs the redelivery sweep publishes again (docs/decisions/0022): due, unclaimed, unrefused grants.
DUE_JOBS = grant_jobs(refunds.JOB_KIND, grants="payment_refund_grants", decisions="payment_refund_decisions",
                      history="payment_refund_history", parent="order_id")
log = structlog.get_logger("gateway.refunds")


@dataclass(frozen=True)
class RefundDecision:
    decision: dict[str, Any]
    grant: dict[str, Any] | None


@dataclass(frozen=True)
class RefundPolicy:
    """What a decision needs from the settings."""

    grant_window_s: float

    @classmethod
    def of(cls, settings: Settings) -> RefundPolicy:
        """A refund grant lives as long as a payout grant (API.md "Payout timing": the window)."""
        return cls(grant_window_s=settings.payout_grant_window_s)


async def append_history(conn: Connection, order_id: str, kind: str, *, actor: str, now: datetime,
                         detail: dict[str, Any], attempt_id: uuid.UUID | None = None,
                         decision_id: uuid.UUID | None = None, grant_id: uuid.UUID | None = None,
                         correlation_id: str | None = None) -> None:
    """One append-only refund event in the caller's transaction (identifiers and codes only)."""
    await conn.execute(SQL["append_history"], {
        "order_id": order_id, "attempt_id": attempt_id, "decision_id": decision_id, "grant_id": grant_id,
        "kind": kind, "now": now, "actor": actor, "correlation_id": correlation_id,
        "detail": Jsonb({key: str(value) if isinstance(value, uuid.UUID) else value
                         for key, value in detail.items() if value is not None})})


async def request_refund(db: Database, clock: Clock, policy: RefundPolicy, *, order_id: str, merchant_id: str,
                         correlation_id: str) -> RefundDecision:
    """``POST /v1/orders/{id}/refund``: another merchant's order is 404; the rest is :func:`decide_in`."""
    async with db.transaction() as conn:
        order = await fetch_one(conn, SQL["lock_order"], {"order_id": order_id})
        if order is None or order["merchant_id"] != merchant_id:
            raise OrderNotFound()
        return await decide_in(conn, clock.now(), policy, order=order, cause="merchant-request",
                               actor_id=f"merchant:{merchant_id}", correlation_id=correlation_id)


async def decide_in(conn: Connection, now: datetime, policy: RefundPolicy, *, order: dict[str, Any],
                    cause: refunds.Cause, actor_id: str, correlation_id: str) -> RefundDecision:
    """Decide one refund request in the caller's transaction, which holds the order row's lock."""
    order_id = order["order_id"]
    await conn.execute(SQL["ensure_refund_row"], {"order_id": order_id, "now": now})
    await fetch_one(conn, SQL["lock_refund_row"], {"order_id": order_id})
    for expired in await fetch_all(conn, SQL["expire_lapsed_grants_of_order"], {"order_id": order_id, "now": now}):
        await append_history(conn, order_id, "grant", actor="payment-refund", now=now, grant_id=expired["grant_id"],
                             detail={"event": "expired"})
    context = await fetch_required(conn, SQL["refund_context"], {"order_id": order_id, "now": now})
    outcome, reason = refunds.decide(refunds.RefundContext(
        order_state=order["state"], unresolved=context["unresolved"], refunded=context["refunded"],
        provider_payment_id=context["provider_payment_id"]))
    decision = await fetch_required(conn, SQL["insert_decision"], {
        "decision_id": uuid.uuid4(), "order_id": order_id, "cause": cause, "outcome": outcome, "reason": reason,
        "policy_version": refunds.POLICY_VERSION, "actor_id": actor_id,
        "evaluated_order_version": order["version"], "paid_attempt_id": context["paid_attempt_id"],
        "provider_payment_id": context["provider_payment_id"], "now": now, "correlation_id": correlation_id})
    await append_history(conn, order_id, "decision", actor=actor_id, now=now, decision_id=decision["decision_id"],
                         correlation_id=correlation_id, detail={
                             "cause": cause, "outcome": outcome, "reason": reason,
                             "policy_version": refunds.POLICY_VERSION})
    grant = await _issue(conn, now, policy, order, decision, correlation_id) if outcome == "Allowed" else None
    await resolve_by_key(conn, refunds.grant_expired_escalation_key(order_id), now,
                         f"refund decision {decision['decision_id']} ({outcome})")
    log.info("payment_refund_decided", order_id=order_id, decision_id=str(decision["decision_id"]), cause=cause,
             outcome=outcome, reason=reason, correlation_id=correlation_id)
    return RefundDecision(decision, grant)


async def _issue(conn: Connection, now: datetime, policy: RefundPolicy, order: dict[str, Any],
                 decision: dict[str, Any], correlation_id: str) -> dict[str, Any]:
    """The single-use grant (valid from the decision for the grant window) and its job's outbox row."""
    order_id = order["order_id"]
    allocated = await fetch_required(conn, SQL["allocate_refund"], {"order_id": order_id, "now": now})
    grant = await fetch_required(conn, SQL["insert_grant"], {
        "grant_id": uuid.uuid4(), "decision_id": decision["decision_id"], "order_id": order_id,
        "merchant_id": order["merchant_id"], "audience": refunds.AUDIENCE,
        "refund_number": allocated["refunds_allocated"], "provider_payment_id": decision["provider_payment_id"],
        "policy_version": decision["policy_version"], "not_before": now,
        "expires_at": now + timedelta(seconds=policy.grant_window_s)})
    await append_history(conn, order_id, "grant", actor=decision["actor_id"], now=now, grant_id=grant["grant_id"],
                         decision_id=decision["decision_id"], correlation_id=correlation_id,
                         detail={"event": "issued", "refund_number": grant["refund_number"]})
    await enqueue(conn, dedup_key=f"payment-refund-grant:{grant['grant_id']}:job", kind=refunds.JOB_KIND, now=now,
                  payload={"order_id": order_id, "grant_id": str(grant["grant_id"]),
                           "correlation_id": correlation_id, "deliver_at": now.isoformat()})
    return grant


async def decide_after_cancel(conn: Connection, now: datetime, policy: RefundPolicy, order_id: str) -> RefundDecision:
    """The automatic refund of a payment that succeeded after its order's cancellation, decided in
    the transaction that recorded the success (it holds the order lock and made the order
    ``PaidAfterCancel``)."""
    order = await fetch_required(conn, SQL["lock_order"], {"order_id": order_id})
    return await decide_in(conn, now, policy, order=order, cause="paid-after-cancel", actor_id=refunds.SYSTEM_ACTOR,
                           correlation_id=f"order:{order_id}:paid-after-cancel")


async def expire_unused_grants(db: Database, clock: Clock, *, reminder_interval_s: float, limit: int = 100) -> int:
    """Expire every refund grant whose window closed unclaimed; how many. A merchant's refund that
    thereby never ran, on an order still paid, is escalated ``order:<id>:refund-grant-expired``
    (once per open episode, closed by the order's next refund decision); a cancelled order's is
    the ``refund-owed`` check's (``gateway.refunds.settlement.raise_owed``)."""
    now = clock.now()
    async with db.transaction() as conn:
        expired = await fetch_all(conn, SQL["expire_unused_grants"], {"now": now, "limit": limit})
        for grant in expired:
            await append_history(conn, grant["order_id"], "grant", actor="payment-refund-sweeper", now=now,
                                 grant_id=grant["grant_id"], detail={"event": "expired",
                                                                     "refund_number": grant["refund_number"]})
            if grant["cause"] == "merchant-request" and grant["order_state"] in refunds.REFUNDABLE:
                await raise_escalation(conn, escalation_key=refunds.grant_expired_escalation_key(grant["order_id"]),
                                       reason="payment-refund-grant-expired-unused", now=now,
                                       reminder_interval_s=reminder_interval_s, attempt_id=grant["paid_attempt_id"],
                                       details={"order_id": grant["order_id"], "grant_id": str(grant["grant_id"]),
                                                "refund_number": grant["refund_number"]})
    if expired:
        log.warning("payment_refund_grants_expired_unused", grants=len(expired))
    return len(expired)
