"""The governance decision and the authority an Allowed one issues (seed 000, "One persistence
sequence" and "Issue Short-Lived Payout Execution Authority").

An Allowed decision is written in one transaction with its grant (audience ``payout-executor``,
the timing rules' window, the executable payout version, an attempt number allocated under the
payout row lock), the daily-limit reservation (a conditional update), the payout's move to
Approved and the outbox row that publishes the job. If the reservation's condition fails because
a concurrent decision took the room, the decision written is Denied ``tenant.daily-limit``.
A non-allowed decision is written alone: no grant, no reservation, no job.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import structlog

from gateway.clock import Clock
from gateway.domain.attempt_timing import AttemptTimings
from gateway.domain.errors import Forbidden
from gateway.domain.payout_approval import approval_refusal
from gateway.domain.payout_errors import (
    AttemptUnresolved,
    GrantNotFound,
    GrantNotRevocable,
    TermsMismatch,
)
from gateway.domain.payout_policy import (
    Outcome,
    Reason,
    RequesterFacts,
    Stage,
    Verdict,
    evaluate,
)
from gateway.domain.payout_terms import unbound_terms
from gateway.escalations.store import resolve_by_key_prefix_of_payout
from gateway.outbox.store import enqueue
from gateway.payouts import history, records
from gateway.payouts.config import AUDIENCE, EXPIRED_GRANT_PREFIX, JOB_KIND, OPERATION
from gateway.store.db import Connection, Database, fetch_all, fetch_one, fetch_required
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "decisions.sql")
log = structlog.get_logger("gateway.payouts")


@dataclass(frozen=True)
class DecisionRequest:
    """Who asks for a decision on which payout; every fact comes from authentication or the record."""

    payout_id: str
    tenant_id: str
    actor_id: str
    approval_limit_minor: int
    correlation_id: str
    stage: Stage | None = None  # None: "submit" for a Draft payout, else "reauthorize"
    acknowledgment: str | None = None
    terms: Mapping[str, Any] | None = None  # /submit: the body's terms, which must be the record's
    submitted_payout_id: str | None = None
    approving: bool = False  # /approve: the actor must be a clerk who may approve this payout


def _preconditions(record: dict[str, Any], request: DecisionRequest) -> None:
    """What the request itself must satisfy, checked under the payout lock before anything is
    written: a /submit binds the record's terms (409 ``payout.terms_mismatch``, no decision); an
    /approve comes from a clerk who is not the requester and whose limit covers the amount (403)."""
    if request.terms is not None and (unbound := unbound_terms(record, request.terms, request.submitted_payout_id)):
        raise TermsMismatch(fields=unbound)
    if request.approving and (refusal := approval_refusal(
            approver_id=request.actor_id, approver_limit_minor=request.approval_limit_minor,
            requester_id=record["requester_id"], amount_minor=record["amount_minor"])):
        raise Forbidden(refusal)


@dataclass(frozen=True)
class DecisionResult:
    decision: dict[str, Any]
    grant: dict[str, Any] | None


def job_payload(grant: dict[str, Any], correlation_id: str) -> dict[str, Any]:
    """The queue message: references only (seed 000, "The Queue Message Is Transport"). deliver_at
    tells the relay when to publish; it grants nothing."""
    return {"payout_id": grant["payout_id"], "grant_id": str(grant["grant_id"]), "correlation_id": correlation_id,
            "deliver_at": grant["not_before"].isoformat()}


async def decide(db: Database, clock: Clock, timings: AttemptTimings, request: DecisionRequest) -> DecisionResult:
    now = clock.now()
    async with db.transaction() as conn:
        record = await records.get_payout(conn, request.payout_id, request.tenant_id, lock=True)
        _preconditions(record, request)
        stage: Stage = request.stage or ("submit" if record["state"] == "Draft" else "reauthorize")
        if stage == "reauthorize" and record["state"] in ("Executing", "Unknown"):
            raise AttemptUnresolved()
        if request.acknowledgment is not None:
            await records.acknowledge(conn, now, request.payout_id, reason_code=request.acknowledgment,
                                      actor=request.actor_id, correlation_id=request.correlation_id)
        await expire_grants(conn, now, await fetch_all(conn, _SQL["expire_lapsed_grants_of_payout"],
                                                        {"payout_id": request.payout_id, "now": now}))
        requester = RequesterFacts(request.actor_id, request.approval_limit_minor)
        loaded = await records.load_context(conn, request.payout_id, stage=stage, requester=requester, now=now)
        if stage == "reauthorize" and loaded.context.payout and loaded.context.payout.has_unresolved_attempt:
            raise AttemptUnresolved()
        verdict = evaluate(loaded.context)
        if verdict.allowed and not await records.reserve(conn, record, loaded.settlement_date):
            verdict = Verdict(Outcome.DENIED, Reason.DAILY_LIMIT, verdict.policy_version)
        decision = await _write_decision(conn, now, request, loaded.context, verdict)
        grant = await _issue(conn, now, timings, record, decision, request, loaded.settlement_date) \
            if verdict.allowed else None
    log.info("payout_decided", payout_id=request.payout_id, decision_id=str(decision["decision_id"]),
             outcome=decision["outcome"], reason=decision["reason"], correlation_id=request.correlation_id,
             grant_id=str(grant["grant_id"]) if grant else None)
    return DecisionResult(decision, grant)


async def _write_decision(conn: Connection, now: datetime, request: DecisionRequest, context: Any,
                          verdict: Verdict) -> dict[str, Any]:
    versions = (context.tenant.settings_version if context.tenant else None,
                context.beneficiary.version if context.beneficiary else None,
                context.destination.version if context.destination else None)
    decision = {
        "decision_id": uuid.uuid4(), "payout_id": request.payout_id, "operation": OPERATION,
        "outcome": verdict.outcome.value, "reason": verdict.reason.value, "policy_version": verdict.policy_version,
        "terms_fingerprint": context.intent.terms_fingerprint, "actor_id": request.actor_id,
        "approval_limit_minor": request.approval_limit_minor,
        "evaluated_payout_version": context.intent.payout_version, "tenant_settings_version": versions[0],
        "beneficiary_version": versions[1], "destination_version": versions[2], "now": now,
        "correlation_id": request.correlation_id,
    }
    await conn.execute(_SQL["insert_decision"], decision)
    await history.append(conn, request.payout_id, "decision", actor=request.actor_id, now=now,
                         decision_id=decision["decision_id"], correlation_id=request.correlation_id,
                         detail={"outcome": decision["outcome"], "reason": decision["reason"],
                                 "policy_version": decision["policy_version"],
                                 "terms_fingerprint": decision["terms_fingerprint"],
                                 "evaluated_payout_version": decision["evaluated_payout_version"]})
    # The fresh decision an expired grant's payout was waiting for (gateway/payouts/grant_sweep.py).
    await resolve_by_key_prefix_of_payout(conn, EXPIRED_GRANT_PREFIX, request.payout_id, now,
                                          f"answered by decision {decision['decision_id']} ({decision['outcome']})")
    return {**decision, "observed_at": now}


async def _issue(conn: Connection, now: datetime, timings: AttemptTimings, record: dict[str, Any],
                 decision: dict[str, Any], request: DecisionRequest, settlement_date: date | None) -> dict[str, Any]:
    approved = await fetch_one(conn, _SQL["approve_payout"], {
        "payout_id": record["payout_id"], "version": record["version"], "now": now,
        "settlement_date": settlement_date})
    if approved is None:  # the row is locked since the context read: this cannot race
        raise RuntimeError(f"payout {record['payout_id']} moved under its own lock")
    not_before, expires_at = timings.grant_window(record["release_at"])
    grant = await fetch_required(conn, _SQL["insert_grant"], {
        "grant_id": uuid.uuid4(), "decision_id": decision["decision_id"], "payout_id": record["payout_id"],
        "tenant_id": record["tenant_id"], "operation": OPERATION, "audience": AUDIENCE,
        "terms_fingerprint": decision["terms_fingerprint"], "executable_payout_version": approved["version"],
        "attempt_number": approved["attempts_allocated"], "policy_version": decision["policy_version"],
        "not_before": not_before, "expires_at": expires_at})
    await history.append(conn, record["payout_id"], "transition", actor=request.actor_id, now=now,
                         decision_id=decision["decision_id"], grant_id=grant["grant_id"],
                         correlation_id=request.correlation_id,
                         detail={"from": record["state"], "to": "Approved", "version": approved["version"],
                                 "attempt_number": grant["attempt_number"]})
    await enqueue(conn, dedup_key=f"payout-grant:{grant['grant_id']}:job", kind=JOB_KIND, now=now,
                  payload=job_payload(grant, request.correlation_id))
    return grant


async def expire_grants(conn: Connection, now: datetime, expired: list[dict[str, Any]]) -> None:
    """Record grants just moved to Expired and release their reservations: an unused grant's
    reservation is released when it expires (seed 000, "Issue Short-Lived ... Authority")."""
    for grant in expired:
        await records.release_reservation(conn, grant["payout_id"])
        await history.append(conn, grant["payout_id"], "transition", actor="payout-sweeper", now=now,
                             grant_id=grant["grant_id"], detail={"grant_state": "Expired"})


async def revoke_grant(db: Database, now: datetime, grant_id: str, *, reason: str, actor: str,
                       correlation_id: str) -> dict[str, Any]:
    """A finance hold: an Issued grant becomes Revoked and its reservation is released. A consumed
    grant is not revocable: its attempt follows its own outcome (stopping it is a recall)."""
    try:
        key = uuid.UUID(grant_id)
    except ValueError:
        raise GrantNotFound() from None
    async with db.transaction() as conn:
        grant = await fetch_one(conn, _SQL["revoke_grant"], {"grant_id": key, "reason": reason, "now": now})
        if grant is None:
            existing = await fetch_one(conn, _SQL["get_grant"], {"grant_id": key})
            if existing is None:
                raise GrantNotFound()
            raise GrantNotRevocable(f"the grant is {existing['state']}")
        await records.release_reservation(conn, grant["payout_id"])
        await history.append(conn, grant["payout_id"], "transition", actor=actor, now=now, grant_id=key,
                             correlation_id=correlation_id, detail={"grant_state": "Revoked", "reason": reason})
    log.info("payout_grant_revoked", payout_id=grant["payout_id"], grant_id=grant_id, correlation_id=correlation_id)
    return grant
