"""The worker validation pipeline (seed 000, "The Worker Validation Pipeline"), in the seed's order:

``grant.unknown`` -> ``binding.mismatch`` (grant for another payout) -> ``presenter.not-audience``
-> ``grant.revoked`` -> ``grant.consumed`` (a duplicate delivery when its attempt is this
payout's) -> ``grant.expired`` -> ``context.unavailable`` (postpones: the grant is untouched) ->
``payout.not-executable`` -> ``binding.mismatch`` (terms fingerprint) -> ``policy.no-longer-allows``.

Validation is a read, of one snapshot. What it returns on success is the set of versions it relied on; the claim
fences on exactly those. Requester facts are the ones the decision captured, deliberately not
re-read: the clerk acted at decision time and is not acting now (docs/decisions/0007-...).
A delivery that arrives before the grant's ``not_before`` is postponed, not refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.domain.payout_policy import (
    ContextVersions,
    RequesterFacts,
    evaluate_for_execution,
)
from gateway.payouts import records
from gateway.pipeline.grants import presented_grant
from gateway.pipeline.kind import AttemptKind, Postponed, Presenter, Refused
from gateway.store.db import Database, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "decisions.sql")


@dataclass(frozen=True)
class PayoutJob:
    """What a payout or recall queue message carries: references only."""

    payout_id: str
    grant_id: str
    correlation_id: str

    def ids(self) -> dict[str, str]:
        return {"payout_id": self.payout_id, "grant_id": self.grant_id, "correlation_id": self.correlation_id}


@dataclass(frozen=True)
class Valid:
    grant: dict[str, Any]
    payout: dict[str, Any]
    versions: ContextVersions


Validation = Valid | Refused | Postponed


async def validate(kind: AttemptKind, db: Database, now: datetime, job: PayoutJob, presenter: Presenter) -> Validation:
    async with db.transaction() as conn:
        await conn.execute(_SQL["one_snapshot"])
        grant = await presented_grant(kind, conn, job.grant_id, subject_id=job.payout_id, presenter=presenter, now=now)
        if isinstance(grant, (Refused, Postponed)):
            return grant
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
