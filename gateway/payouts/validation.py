"""The worker validation pipeline (seed 000, "The Worker Validation Pipeline"), in the seed's order:

``grant.unknown`` -> ``binding.mismatch`` (grant for another payout) -> ``presenter.not-audience``
-> ``grant.revoked`` -> ``grant.consumed`` (a duplicate delivery when its attempt is this
payout's) -> ``grant.expired`` -> ``context.unavailable`` (postpones: the grant is untouched) ->
``payout.not-executable`` -> ``binding.mismatch`` (terms fingerprint) -> ``policy.no-longer-allows``.

Validation is a read. What it returns on success is the set of versions it relied on; the claim
fences on exactly those. Requester facts are the ones the decision captured, deliberately not
re-read: the clerk acted at decision time and is not acting now (docs/decisions/0007-...).
A delivery that arrives before the grant's ``not_before`` is postponed, not refused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.domain.payout_policy import (
    ContextVersions,
    RequesterFacts,
    evaluate_for_execution,
)
from gateway.payouts import attempts, records
from gateway.payouts.config import OPERATION
from gateway.store.db import Database, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "decisions.sql")


@dataclass(frozen=True)
class PayoutJob:
    """What a queue message carries: references only."""

    payout_id: str
    grant_id: str
    correlation_id: str


@dataclass(frozen=True)
class Presenter:
    """A workload identity: which service presents a grant, and the audiences it serves."""

    service_id: str
    audiences: frozenset[str]


@dataclass(frozen=True)
class Valid:
    grant: dict[str, Any]
    payout: dict[str, Any]
    versions: ContextVersions


@dataclass(frozen=True)
class Refused:
    code: str
    grant: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None


@dataclass(frozen=True)
class Postponed:
    code: str
    until: datetime | None = None


Validation = Valid | Refused | Postponed


async def validate(db: Database, now: datetime, job: PayoutJob, presenter: Presenter) -> Validation:
    try:
        grant_id = uuid.UUID(job.grant_id)
    except ValueError:
        return Refused("grant.unknown")
    async with db.transaction() as conn:
        grant = await fetch_one(conn, _SQL["get_grant"], {"grant_id": grant_id})
        if grant is None:
            return Refused("grant.unknown")
        if grant["payout_id"] != job.payout_id:
            return Refused("binding.mismatch", grant, {"message_payout_id": job.payout_id})
        if grant["operation"] != OPERATION or grant["audience"] not in presenter.audiences:
            return Refused("presenter.not-audience", grant, {"presenter": presenter.service_id})
        if grant["state"] == "Revoked":
            return Refused("grant.revoked", grant)
        if grant["state"] == "Consumed":
            attempt = await attempts.attempt_of_grant(conn, grant_id)
            duplicate = attempt is not None and attempt["payout_id"] == job.payout_id
            return Refused("grant.consumed", grant, {"duplicate_delivery": duplicate,
                                                     "attempt_id": str(attempt["attempt_id"]) if attempt else None})
        if grant["state"] == "Expired" or now >= grant["expires_at"]:
            return Refused("grant.expired", grant)
        if now < grant["not_before"]:
            return Postponed("grant.not-yet-valid", grant["not_before"])
        decision = await fetch_one(conn, _SQL["get_decision"], {"decision_id": grant["decision_id"]})
        if decision is None:
            return Refused("grant.unknown", grant)
        requester = RequesterFacts(decision["actor_id"], decision["approval_limit_minor"])
        loaded = await records.load_context(conn, job.payout_id, stage="execute", requester=requester, now=now)
        payout = await records.get_payout(conn, job.payout_id, None)
    current = loaded.context
    if current.unavailable or current.payout is None:
        return Postponed("context.unavailable")
    if current.payout.state != "Approved" or current.payout.version != grant["executable_payout_version"]:
        return Refused("payout.not-executable", grant, {"state": current.payout.state,
                                                        "version": current.payout.version})
    if current.intent.terms_fingerprint != grant["terms_fingerprint"]:
        return Refused("binding.mismatch", grant, {"cause": "terms_fingerprint"})
    recheck = evaluate_for_execution(current)
    if not recheck.allowed:
        return Refused("policy.no-longer-allows", grant, {"outcome": recheck.outcome.value,
                                                          "reason": recheck.reason.value})
    return Valid(grant, payout, current.versions())
