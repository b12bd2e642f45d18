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
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog

from gateway.clock import Clock
from gateway.domain.attempt_kinds import PAYOUT_RECALL
from gateway.domain.attempt_timing import AttemptTimings
from gateway.domain.effect_manifest import Transport, recall_manifest
from gateway.domain.payout_errors import AttemptUnresolved, NotRecallable
from gateway.domain.recall_policy import recall_outcome, recall_reason
from gateway.escalations.store import resolve_by_key_prefix_of_payout
from gateway.outbox.store import enqueue
from gateway.payouts import history, records
from gateway.payouts.config import attempt_timings
from gateway.payouts.governance import persist_recall
from gateway.payouts.validation import PayoutJob
from gateway.pipeline.accounts import NOT_CONFIGURED, operation
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
from gateway.pipeline.views import attempts_view, shown
from gateway.providers import UnsupportedOperation
from gateway.settings import Settings
from gateway.store.db import Connection, Database, fetch_all, fetch_one, fetch_required
from gateway.store.queries import load_queries

ROWS = Rows(PAYOUT_RECALL.attempts, "payout_recall_grants", "provider_recall_id",
            "one_recall_attempt_per_provider_recall")
_SQL = load_queries("gateway.payouts", "recalls.sql")
log = structlog.get_logger("gateway.payouts")

OPERATION = "payout.recall"
AUDIENCE = "payout-recall-executor"
JOB_KIND = PAYOUT_RECALL.job
EXPIRED_GRANT_PREFIX = "payout-recall-grant:"  # gateway/payouts/grant_sweep.py
RECALL_EXECUTOR = Presenter("svc-payout-recall-worker", frozenset({AUDIENCE}))

def client_reference(payout_id: str, number: int) -> str:
    return f"{payout_id}-r{number}"


def idempotency_key(payout_id: str, number: int) -> str:
    return f"recall-{payout_id}-r{number}"


async def _event(conn: Connection, payout_id: str, event: str, *, actor: str, now: datetime,
                 correlation_id: str | None = None, **detail: Any) -> None:
    """The payout's audit trail shows the recall: one ``recall`` event per step, ids in detail."""
    await history.append(conn, payout_id, "recall", actor=actor, now=now, correlation_id=correlation_id,
                         detail={"operation": OPERATION, "event": event,
                                 **{k: str(v) if isinstance(v, uuid.UUID) else v for k, v in detail.items()}})


async def _history(conn: Connection, payout_id: str, event: Event, /, *, actor: str, now: datetime,
                   detail: dict[str, Any], attempt_id: Any = None, grant_id: Any = None,
                   correlation_id: str | None = None) -> None:
    """The pipeline's evidence of a recall attempt, as ``recall`` events naming it in detail (the
    history's id columns reference the payout's own tables)."""
    await _event(conn, payout_id, event, actor=actor, now=now, correlation_id=correlation_id,
                 recall_attempt_id=attempt_id, recall_grant_id=grant_id, **detail)


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


async def decide_recall(db: Database, clock: Clock, timings: AttemptTimings, request: RecallRequest) -> RecallDecision:
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
        reason = recall_reason(
            already_recalled=await fetch_one(conn, _SQL["recalled"], {"payout_id": payout["payout_id"]}) is not None,
            paid_attempt=paid, policy_version=policy["current_version"] if policy else None)
        outcome = recall_outcome(reason)
        decision = await fetch_required(conn, _SQL["insert_decision"], {
            "decision_id": uuid.uuid4(), "payout_id": payout["payout_id"], "outcome": outcome, "reason": reason,
            "policy_version": policy["current_version"] if policy else None, "actor_id": request.actor_id,
            "evaluated_payout_version": payout["version"], "paid_attempt_id": paid["attempt_id"] if paid else None,
            "provider_payout_id": paid["provider_payout_id"] if paid else None, "now": now,
            "correlation_id": request.correlation_id})
        await _event(conn, payout["payout_id"], "decision", actor=request.actor_id, now=now,
                     correlation_id=request.correlation_id, recall_decision_id=decision["decision_id"],
                     outcome=outcome, reason=reason, policy_version=decision["policy_version"])
        await resolve_by_key_prefix_of_payout(conn, EXPIRED_GRANT_PREFIX, payout["payout_id"], now,
                                              f"answered by recall decision {decision['decision_id']} ({outcome})")
        grant = await _issue(conn, now, timings, payout, decision, request) if outcome == "Allowed" else None
    log.info("payout_recall_decided", payout_id=request.payout_id, decision_id=str(decision["decision_id"]),
             outcome=outcome, reason=reason, correlation_id=request.correlation_id)
    return RecallDecision(decision, grant)


async def _issue(conn: Connection, now: datetime, timings: AttemptTimings, payout: dict[str, Any],
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


# Admission and claim (the pipeline runs the rest: gateway.pipeline) --------------------------------

@dataclass(frozen=True)
class Admitted:
    grant: dict[str, Any]
    payout: dict[str, Any]
    paid_account: str  # the account the recalled payout was paid on: it holds the provider payout id


async def _admit(db: Database, now: datetime, job: PayoutJob, presenter: Presenter) -> Admitted | Refused | Postponed:
    """The grant checks every grant-authorized kind makes (gateway.domain.grants), then: the payout
    is still Paid."""
    async with db.transaction() as conn:
        grant = await presented_grant(RECALL, conn, job.grant_id, subject_id=job.payout_id, presenter=presenter,
                                      now=now)
        if isinstance(grant, (Refused, Postponed)):
            return grant
        payout = await records.get_payout(conn, job.payout_id, grant["tenant_id"])
        paid = await fetch_required(conn, _SQL["paid_account"], {"decision_id": grant["decision_id"]})
    if payout["state"] != "Paid":
        return Refused("payout.not-recallable", grant, {"state": payout["state"]})
    return Admitted(grant, payout, paid["provider_account"])


async def claim(db: Database, now: datetime, settings: Settings, admitted: Admitted,
                worker_id: str) -> Claimed | Refused:
    """The atomic claim: the grant consumed by ``now``, the attempt Claimed on the account the
    payout was paid on (only that account knows its provider payout id, whatever the configuration
    lists first today) with its seed 001 effect record, or nothing. An account no longer configured
    claims nothing: the grant lapses, as a refund's does. Raises whatever the commit raises: the
    caller treats that as unconfirmed and sends nothing."""
    grant, payout = admitted.grant, admitted.payout
    account = settings.account(admitted.paid_account)
    if account is None:
        return Refused(NOT_CONFIGURED, grant)
    timings = attempt_timings(settings, account)
    payout_id, number = payout["payout_id"], grant["recall_number"]
    try:
        operation(RECALL, account.id)
    except UnsupportedOperation:  # e.g. Stripe (docs/decisions/0047): nothing is claimed or sent
        return Refused("provider.operation-unsupported", grant)
    async with db.transaction() as conn:
        if not await ROWS.consume_grant(conn, now, grant["grant_id"], worker_id):
            return Refused("claim.lost", grant)
        attempt = await fetch_required(conn, _SQL["insert_attempt"], {
            "attempt_id": uuid.uuid4(), "payout_id": payout_id, "grant_id": grant["grant_id"],
            "decision_id": grant["decision_id"], "recall_number": number, "provider_account": account.id,
            "provider_payout_id": grant["provider_payout_id"], "client_reference": client_reference(payout_id, number),
            "idempotency_key": idempotency_key(payout_id, number), "amount_minor": payout["amount_minor"],
            "currency": payout["currency"], "worker_id": worker_id, "now": now,
            "send_deadline": timings.send_deadline(now), "lease_expires_at": timings.lease_expiry(now),
            "escalation_deadline": timings.escalation_deadline(now)})
        # Seed 001: the effect record commits with the claim.
        await persist_recall(RECALL, conn, attempt, account=account, now=now, actor=worker_id,
                             reminder_interval_s=settings.reminder_interval_s)
        await _event(conn, payout_id, "claimed", actor=worker_id, now=now, recall_attempt_id=attempt["attempt_id"],
                     recall_grant_id=grant["grant_id"], recall_number=number, attempt_state="Claimed",
                     lease_epoch=attempt["lease_epoch"])
    return Claimed(attempt)


def _manifest(transport: Transport, body: dict[str, Any], attempt: dict[str, Any]) -> dict[str, Any]:
    return recall_manifest(transport, body, provider_payout_id=attempt["provider_payout_id"],
                           amount_minor=attempt["amount_minor"], currency=attempt["currency"])


# A recall attempt links to the payout it recalls (seed 000 section 17): the payout row stays Paid,
# so the default ``follow`` (nothing) applies, and a recall has no return.
RECALL = AttemptKind(
    name=PAYOUT_RECALL.name, operation=OPERATION, parent="payout_id", rows=ROWS,
    history=_history, admit=_admit, claim=claim, manifest=_manifest, timings=attempt_timings,
    identity=lambda attempt, record: record.get("payout") == attempt["provider_payout_id"],
    escalation_facts=lambda attempt: {"provider_payout_id": attempt["provider_payout_id"]},
    attempt_fields=("attempt_id", "recall_number", "state", "grant_id", "decision_id", "client_reference",
                    "idempotency_key", "provider_payout_id", "provider_recall_id", "provider_status",
                    "outcome_reason", "claimed_at", "started_at", "send_deadline", "sends", "resolved_at"),
    evidence=_SQL["effect_evidence"],
)


# View ------------------------------------------------------------------------------------------------

GRANT_FIELDS = ("grant_id", "decision_id", "state", "operation", "audience", "recall_number", "provider_payout_id",
                "policy_version", "not_before", "expires_at", "consumed_at", "expired_at")
DECISION_FIELDS = ("decision_id", "operation", "outcome", "reason", "policy_version", "actor_id",
                   "evaluated_payout_version", "provider_payout_id", "observed_at")


async def recalls_view(conn: Connection, payout_id: str) -> dict[str, Any]:
    """The ``recalls`` field of ``GET /v1/payouts/{id}``: decisions, grants and attempts, oldest
    first; each attempt with its seed 001 ``effect`` (None for one claimed before recall effects)."""
    key = {"payout_id": payout_id}
    grants = await fetch_all(conn, _SQL["grants_of_payout"], key)
    by_decision = {g["decision_id"]: g for g in grants}
    return {
        "decisions": [recall_decision_view(d, by_decision.get(d["decision_id"]))
                      for d in await fetch_all(conn, _SQL["decisions_of_payout"], key)],
        "grants": [shown(g, GRANT_FIELDS) for g in grants],
        "attempts": await attempts_view(RECALL, conn, await fetch_all(conn, _SQL["attempts_of_payout"], key)),
    }


def recall_decision_view(decision: dict[str, Any], grant: dict[str, Any] | None) -> dict[str, Any]:
    return shown(decision, DECISION_FIELDS) | {
        "grant": None if grant is None else shown(grant, ("grant_id", "not_before", "expires_at", "recall_number"))}
