"""Payout recall: its own decision, grant and attempts (docs/decisions/0015; seed 000 section 17,
"Compensation and Reversal Are Separate Operations": a recall has "its own request, its own
decision, its own authority, and its own attempts and outcomes"; "The original payout's records
stay as they are. The recall links to them.").

Storage is separate (``payout_recall_decisions``, ``payout_recall_grants``,
``payout_recall_attempts``; recalls.sql), so the payout's decisions, grants, attempts, reservation
and ``one_unresolved_attempt_per_payout`` are never written by a recall. The rules are the payout
pipeline's: an Allowed decision commits with a single-use grant and an outbox row (references
only); the atomic claim consumes the grant by the database clock and creates the attempt Claimed
with its send deadline and lease; Started is confirmed before any send; every resolution is one
conditional write that also closes the attempt's escalations; each step appends a ``recall``
event to ``payout_history``. Identities (seed 000 section 16): recall attempt N has client
reference ``<payout_id>-r<N>`` and key ``recall-<payout_id>-r<N>``, N allocated under the
``payout_recalls`` row lock by the decision, never by the worker.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import structlog

from gateway.clock import Clock
from gateway.domain.cardco_notifications import Notification
from gateway.domain.payout_errors import AttemptUnresolved, NotRecallable
from gateway.domain.payout_notifications import Escalate, Ignore, RecordReturn, Resolve, decide
from gateway.domain.payout_outcomes import (
    RECALL_STATUS_TABLE,
    AttemptState,
    Classification,
    Expected,
    classify_record,
)
from gateway.domain.payout_timing import PayoutTimings
from gateway.effects.certify import Certifier
from gateway.effects.ledger import advance
from gateway.effects.views import effects_of
from gateway.escalations.store import resolve_by_key_prefix
from gateway.outbox.store import enqueue
from gateway.payouts import history, records
from gateway.payouts.attempt_rows import AttemptRows
from gateway.payouts.escalations import escalate
from gateway.store.db import Connection, Database, Statement, fetch_all, fetch_one, fetch_required
from gateway.store.queries import load_queries

ROWS = AttemptRows("payout_recall", "payout_recall_attempts", "payout_recall_grants", "provider_recall_id")
_SQL: dict[str, Statement] = {**load_queries("gateway.payouts", "recalls.sql"), **ROWS.sql}
log = structlog.get_logger("gateway.payouts")

OPERATION = "payout.recall"
AUDIENCE = "payout-recall-executor"
JOB_KIND = "payout-recall-job"
FINAL = frozenset({AttemptState.SUCCEEDED, AttemptState.FAILED, AttemptState.NOT_STARTED, AttemptState.NOT_APPLIED})

Reason = Literal["recall.allowed", "recall.payout-not-paid", "recall.already-recalled", "context.unavailable"]


def client_reference(payout_id: str, number: int) -> str:
    return f"{payout_id}-r{number}"


def idempotency_key(payout_id: str, number: int) -> str:
    return f"recall-{payout_id}-r{number}"


def escalation_prefix(attempt_id: uuid.UUID) -> str:
    return f"payout-recall-attempt:{attempt_id}:"


async def _event(conn: Connection, payout_id: str, event: str, *, actor: str, now: datetime,
                 correlation_id: str | None = None, **detail: Any) -> None:
    """The payout's audit trail shows the recall: one ``recall`` event per step, ids in detail."""
    await history.append(conn, payout_id, "recall", actor=actor, now=now, correlation_id=correlation_id,
                         detail={"operation": OPERATION, "event": event,
                                 **{k: str(v) if isinstance(v, uuid.UUID) else v for k, v in detail.items()}})


def rfc3339(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


# Decision ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RecallRequest:
    payout_id: str
    tenant_id: str
    actor_id: str
    correlation_id: str


@dataclass(frozen=True)
class RecallDecision:
    decision: dict[str, Any]
    grant: dict[str, Any] | None


async def decide_recall(db: Database, clock: Clock, timings: PayoutTimings, request: RecallRequest) -> RecallDecision:
    """404 for another tenant's payout, 409 ``payout.not_recallable`` unless Paid and 409
    ``payout.attempt_unresolved`` while a recall grant or attempt is open (no decision either
    way); otherwise a decision, and for an Allowed one its grant and outbox row, in one transaction."""
    now = clock.now()
    async with db.transaction() as conn:
        payout = await records.get_payout(conn, request.payout_id, request.tenant_id, lock=True)
        if payout["state"] != "Paid":
            raise NotRecallable(f"the payout is {payout['state']}")
        await conn.execute(_SQL["ensure_recall_row"], {"payout_id": payout["payout_id"], "now": now})
        await fetch_one(conn, _SQL["lock_recall_row"], {"payout_id": payout["payout_id"]})
        for expired in await fetch_all(conn, _SQL["expire_lapsed_grants_of_payout"],
                                       {"payout_id": payout["payout_id"], "now": now}):
            await _event(conn, payout["payout_id"], "grant-expired", actor="payout-recall", now=now,
                         recall_grant_id=expired["grant_id"])
        if await fetch_one(conn, _SQL["unresolved"], {"payout_id": payout["payout_id"]}) is not None:
            raise AttemptUnresolved("a recall of this payout is still open")
        paid = await fetch_one(conn, _SQL["paid_attempt"], {"payout_id": payout["payout_id"]})
        policy = await fetch_one(conn, _SQL["recall_policy"], {})
        reason: Reason
        if await fetch_one(conn, _SQL["recalled"], {"payout_id": payout["payout_id"]}) is not None:
            reason = "recall.already-recalled"
        elif paid is not None and paid["provider_status"] == "returned":
            reason = "recall.payout-not-paid"  # a return got there first
        elif policy is None or paid is None or paid["provider_payout_id"] is None:
            reason = "context.unavailable"
        else:
            reason = "recall.allowed"
        outcome = {"recall.allowed": "Allowed", "context.unavailable": "Deferred"}.get(reason, "Denied")
        decision = await fetch_required(conn, _SQL["insert_decision"], {
            "decision_id": uuid.uuid4(), "payout_id": payout["payout_id"], "outcome": outcome, "reason": reason,
            "policy_version": policy["current_version"] if policy else None, "actor_id": request.actor_id,
            "evaluated_payout_version": payout["version"], "paid_attempt_id": paid["attempt_id"] if paid else None,
            "provider_payout_id": paid["provider_payout_id"] if paid else None, "now": now,
            "correlation_id": request.correlation_id})
        await _event(conn, payout["payout_id"], "decision", actor=request.actor_id, now=now,
                     correlation_id=request.correlation_id, recall_decision_id=decision["decision_id"],
                     outcome=outcome, reason=reason, policy_version=decision["policy_version"])
        grant = await _issue(conn, now, timings, payout, decision, request) if outcome == "Allowed" else None
    log.info("payout_recall_decided", payout_id=request.payout_id, decision_id=str(decision["decision_id"]),
             outcome=outcome, reason=reason, correlation_id=request.correlation_id)
    return RecallDecision(decision, grant)


async def _issue(conn: Connection, now: datetime, timings: PayoutTimings, payout: dict[str, Any],
                 decision: dict[str, Any], request: RecallRequest) -> dict[str, Any]:
    """The single-use grant (the payout timing's grant window, counted from the decision) and the
    outbox row that publishes the job. No daily-limit reservation: a recall spends none."""
    allocated = await fetch_required(conn, _SQL["allocate_recall"], {"payout_id": payout["payout_id"], "now": now})
    grant = await fetch_required(conn, _SQL["insert_grant"], {
        "grant_id": uuid.uuid4(), "decision_id": decision["decision_id"], "payout_id": payout["payout_id"],
        "tenant_id": payout["tenant_id"], "audience": AUDIENCE, "recall_number": allocated["recalls_allocated"],
        "provider_payout_id": decision["provider_payout_id"], "policy_version": decision["policy_version"],
        "not_before": now, "expires_at": now + timedelta(seconds=timings.grant_window_s)})
    await _event(conn, payout["payout_id"], "grant-issued", actor=request.actor_id, now=now,
                 correlation_id=request.correlation_id, recall_grant_id=grant["grant_id"],
                 recall_decision_id=decision["decision_id"], recall_number=grant["recall_number"])
    await enqueue(conn, dedup_key=f"payout-recall-grant:{grant['grant_id']}:job", kind=JOB_KIND, now=now,
                  payload={"payout_id": payout["payout_id"], "grant_id": str(grant["grant_id"]),
                           "correlation_id": request.correlation_id, "deliver_at": now.isoformat()})
    return grant


# Claim, Started, send counter, resolution ----------------------------------------------------------

async def get_grant(conn: Connection, grant_id: uuid.UUID) -> dict[str, Any] | None:
    return await fetch_one(conn, _SQL["get_grant"], {"grant_id": grant_id})


attempt_of_grant = ROWS.attempt_of_grant


async def claim(db: Database, now: datetime, timings: PayoutTimings, *, grant: dict[str, Any],
                payout: dict[str, Any], worker_id: str, provider_account: str,
                record_effect: Callable[[Connection, dict[str, Any]], Awaitable[object]]) -> dict[str, Any] | None:
    """The atomic claim: the grant consumed by ``now``, the attempt Claimed and its seed 001 effect
    record (``record_effect``), or nothing (None). Raises whatever the commit raises: the caller
    treats that as unconfirmed and sends nothing."""
    payout_id, number = payout["payout_id"], grant["recall_number"]
    async with db.transaction() as conn:
        if await fetch_one(conn, _SQL["consume_grant"], {
                "grant_id": grant["grant_id"], "now": now, "worker_id": worker_id}) is None:
            return None
        attempt = await fetch_required(conn, _SQL["insert_attempt"], {
            "attempt_id": uuid.uuid4(), "payout_id": payout_id, "grant_id": grant["grant_id"],
            "decision_id": grant["decision_id"], "recall_number": number, "provider_account": provider_account,
            "provider_payout_id": grant["provider_payout_id"], "client_reference": client_reference(payout_id, number),
            "idempotency_key": idempotency_key(payout_id, number), "amount_minor": payout["amount_minor"],
            "currency": payout["currency"], "worker_id": worker_id, "now": now,
            "send_deadline": timings.send_deadline(now), "lease_expires_at": timings.lease_expiry(now),
            "escalation_deadline": timings.escalation_deadline(now)})
        await record_effect(conn, attempt)  # seed 001 (issue 8): the effect record commits with the claim
        await _event(conn, payout_id, "claimed", actor=worker_id, now=now, recall_attempt_id=attempt["attempt_id"],
                     recall_grant_id=grant["grant_id"], recall_number=number, attempt_state="Claimed",
                     lease_epoch=attempt["lease_epoch"])
    return attempt


async def mark_started(db: Database, now: datetime, attempt: dict[str, Any], epoch: int) -> bool:
    """True only when the Started write is confirmed committed; any doubt means do not send."""
    async def record(conn: Connection) -> None:
        await _event(conn, attempt["payout_id"], "transition", actor=attempt["claimed_by"], now=now,
                     recall_attempt_id=attempt["attempt_id"], attempt_state="Started", lease_epoch=epoch)
        await advance(conn, attempt["attempt_id"], "Started", actor=attempt["claimed_by"], now=now)  # issue 8
    return await ROWS.mark_started(db, now, attempt, epoch, record)


count_send = ROWS.count_send


async def resolve(conn: Connection, now: datetime, attempt: dict[str, Any], state: AttemptState, reason: str, *,
                  actor: str, from_states: Sequence[AttemptState], epoch: int | None = None,
                  provider_recall_id: str | None = None, provider_status: str | None = None,
                  next_check_at: datetime | None = None, certifier: Certifier | None = None) -> dict[str, Any] | None:
    """The one narrow evidence write of a recall attempt; None when it was no longer in
    ``from_states`` (or the epoch moved). The payout row is not touched: it stays Paid. The recall's
    effect protocol follows in the same transaction; a confirmed recall is certified with ``certifier``."""
    row = await fetch_one(conn, _SQL["resolve_attempt"], {
        "attempt_id": attempt["attempt_id"], "state": state.value, "reason": reason, "now": now, "epoch": epoch,
        "from_states": [s.value for s in from_states], "provider_id": provider_recall_id,
        "provider_status": provider_status, "next_check_at": next_check_at})
    if row is None:
        return None
    if state in FINAL:
        await resolve_by_key_prefix(conn, escalation_prefix(attempt["attempt_id"]), now,
                                    f"payout recall attempt {state.value} ({reason}) by {actor}")
    await _event(conn, attempt["payout_id"], "transition", actor=actor, now=now, recall_attempt_id=row["attempt_id"],
                 attempt_state=state.value, reason=reason, provider_recall_id=row["provider_recall_id"])
    await advance(conn, attempt["attempt_id"], state.value, actor=actor, now=now, certifier=certifier,
                  attempt=row)  # seed 001 (issue 8)
    log.info("payout_recall_attempt_resolved", payout_id=attempt["payout_id"], attempt_id=str(attempt["attempt_id"]),
             attempt_state=state.value, reason=reason, actor=actor)
    return row


async def record_event(conn: Connection, payout_id: str, event: str, *, actor: str, now: datetime,
                       **detail: Any) -> None:
    await _event(conn, payout_id, event, actor=actor, now=now, **detail)


async def raise_escalation(conn: Connection, now: datetime, attempt: dict[str, Any], cause: str, *,
                           reminder_interval_s: float, **facts: Any) -> None:
    """``payout-recall-attempt:<id>:<problem>``, closed by the resolving transaction."""
    await escalate(conn, now, attempt, cause, reason=f"payout-recall-{cause.split(':')[0]}",
                   reminder_interval_s=reminder_interval_s, key_prefix=escalation_prefix(attempt["attempt_id"]),
                   recall_attempt_id=str(attempt["attempt_id"]), provider_recall_id=attempt["provider_recall_id"],
                   **facts)


def expected(attempt: dict[str, Any]) -> Expected:
    return Expected(attempt["client_reference"], attempt["amount_minor"], attempt["currency"])


def classify_recall(record: dict[str, Any], attempt: dict[str, Any]) -> Classification:
    return classify_record(record, expected(attempt), RECALL_STATUS_TABLE)


due_checks = ROWS.due_checks
lapsed_leases = ROWS.lapsed_leases
fence_lapsed = ROWS.fence_lapsed


# Notifications (the handler's payout hook, gateway.payouts.notifications) ------------------------

async def match(conn: Connection, account_id: str, notification: Notification
                ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The recall attempts a ``payout.recall*`` notification names by reference and by recall id."""
    return await ROWS.lock_attempt(conn, account_id, client_reference=notification.client_reference,
                                   provider_id=notification.provider_object_id)


async def apply_notification(conn: Connection, now: datetime, attempt: dict[str, Any], notification: Notification,
                             *, evidence: dict[str, Any], notification_key: str | None, actor: str,
                             reminder_interval_s: float, certifier: Certifier | None = None) -> str:
    """The same pure decision as a payout notification (``payout_notifications.decide``) over the
    recall classification table, written through :func:`resolve`."""
    seen = classify_recall(notification.subject.model_dump(mode="json"), attempt)
    action = decide(AttemptState(attempt["state"]), attempt["provider_recall_id"], seen)
    taken: str
    if isinstance(action, Resolve):
        written = await resolve(conn, now, attempt, action.state, seen.reason, actor=actor,
                                from_states=action.from_states, provider_recall_id=seen.provider_payout_id,
                                provider_status=seen.provider_status,
                                next_check_at=now if action.state is AttemptState.STARTED else None,
                                certifier=certifier)
        if written is None:
            raise RuntimeError(f"payout recall attempt {attempt['attempt_id']} moved under its own lock")
        taken = "resolved"
    elif isinstance(action, (Ignore, RecordReturn)):  # a recall has no return: nothing to record
        taken = "ignored"
    else:
        if not isinstance(action, Escalate):
            raise TypeError(f"unhandled notification action {action!r}")
        problem = action.cause if notification_key is None else f"{action.cause}:{notification_key}"
        await raise_escalation(conn, now, attempt, problem, reminder_interval_s=reminder_interval_s,
                               notification_event_id=evidence["notification_event_id"],
                               provider_event_id=evidence["provider_event_id"], status=evidence["status"])
        taken = action.cause
    await _event(conn, attempt["payout_id"], "provider_observation", actor=actor, now=now,
                 recall_attempt_id=attempt["attempt_id"], **evidence, action=taken)
    return taken


# View ------------------------------------------------------------------------------------------------

async def recalls_view(conn: Connection, payout_id: str) -> dict[str, Any]:
    """The ``recalls`` field of ``GET /v1/payouts/{id}``: decisions, grants and attempts, oldest
    first; each attempt with its seed 001 ``effect`` (None for one claimed before recall effects)."""
    key = {"payout_id": payout_id}
    grants = await fetch_all(conn, _SQL["grants_of_payout"], key)
    by_decision = {g["decision_id"]: g for g in grants}
    attempts = await fetch_all(conn, _SQL["attempts_of_payout"], key)
    effects = await effects_of(conn, [a["attempt_id"] for a in attempts])
    return {
        "decisions": [recall_decision_view(d, by_decision.get(d["decision_id"]))
                      for d in await fetch_all(conn, _SQL["decisions_of_payout"], key)],
        "grants": [grant_view(g) for g in grants],
        "attempts": [attempt_view(a, effects.get(str(a["attempt_id"]))) for a in attempts],
    }


def grant_view(grant: dict[str, Any]) -> dict[str, Any]:
    return {"grant_id": str(grant["grant_id"]), "decision_id": str(grant["decision_id"]), "state": grant["state"],
            "operation": grant["operation"], "audience": grant["audience"], "recall_number": grant["recall_number"],
            "provider_payout_id": grant["provider_payout_id"], "policy_version": grant["policy_version"],
            "not_before": rfc3339(grant["not_before"]), "expires_at": rfc3339(grant["expires_at"]),
            "consumed_at": rfc3339(grant["consumed_at"]), "expired_at": rfc3339(grant["expired_at"])}


def recall_decision_view(decision: dict[str, Any], grant: dict[str, Any] | None) -> dict[str, Any]:
    return {"decision_id": str(decision["decision_id"]), "operation": decision["operation"],
            "outcome": decision["outcome"], "reason": decision["reason"],
            "policy_version": decision["policy_version"], "actor_id": decision["actor_id"],
            "evaluated_payout_version": decision["evaluated_payout_version"],
            "provider_payout_id": decision["provider_payout_id"], "observed_at": rfc3339(decision["observed_at"]),
            "grant": None if grant is None else {
                "grant_id": str(grant["grant_id"]), "not_before": rfc3339(grant["not_before"]),
                "expires_at": rfc3339(grant["expires_at"]), "recall_number": grant["recall_number"]}}


def attempt_view(row: dict[str, Any], effect: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"attempt_id": str(row["attempt_id"]), "recall_number": row["recall_number"], "state": row["state"],
            "grant_id": str(row["grant_id"]), "decision_id": str(row["decision_id"]),
            "client_reference": row["client_reference"], "idempotency_key": row["idempotency_key"],
            "provider_payout_id": row["provider_payout_id"], "provider_recall_id": row["provider_recall_id"],
            "provider_status": row["provider_status"], "outcome_reason": row["outcome_reason"],
            "claimed_at": rfc3339(row["claimed_at"]), "started_at": rfc3339(row["started_at"]),
            "send_deadline": rfc3339(row["send_deadline"]), "sends": row["sends"],
            "resolved_at": rfc3339(row["resolved_at"]), "effect": effect}  # seed 001 (issue 8)
