"""The payout record: creation, cancellation, reservations and the policy context (seed 000,
"Bind the Exact Payout Before Policy" and "Authoritative Context and the Governance Decision").

The intent policy evaluates is built here from the authoritative record and the authenticated
actor, never from a request body; the context is read in one statement, so its facts and the
versions the worker's claim later fences on come from one snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from gateway.domain.errors import RequestInvalid
from gateway.domain.payout_errors import NotCancellable, PayoutConflict, PayoutNotFound
from gateway.domain.payout_policy import (
    BeneficiaryFacts,
    DestinationFacts,
    PayoutContext,
    PayoutFacts,
    Reason,
    RequesterFacts,
    Stage,
    TenantFacts,
)
from gateway.domain.payout_terms import PayoutIntent, differing_terms
from gateway.effects.certify import certificate_of
from gateway.escalations.store import resolve_by_key_prefix_of_payout
from gateway.payouts import history
from gateway.payouts.config import EXPIRED_GRANT_PREFIX
from gateway.store.db import Connection, Database, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "payouts.sql")


@dataclass(frozen=True)
class LoadedContext:
    """A policy context plus what the decision transaction needs beside it."""

    context: PayoutContext
    settlement_date: date | None


async def create_payout(db: Database, now: datetime, *, tenant_id: str, requester_id: str, correlation_id: str,
                        terms: dict[str, Any], payout_id: str) -> tuple[dict[str, Any], bool]:
    """The Draft payout and whether it was created now; the same id with other terms is a 409."""
    async with db.transaction() as conn:
        row = await fetch_one(conn, _SQL["insert_payout"], {
            **terms, "payout_id": payout_id, "tenant_id": tenant_id, "requester_id": requester_id,
            "correlation_id": correlation_id, "now": now})
        if row is not None:
            await history.append(conn, payout_id, "transition", actor=requester_id, now=now,
                                 correlation_id=correlation_id, detail={"to": "Draft", "version": row["version"]})
            return row, True
        existing = await fetch_one(conn, _SQL["get_payout"], {"payout_id": payout_id})
    if existing is None:
        raise RequestInvalid("destination_id names no registered destination")
    if existing["tenant_id"] != tenant_id or differing_terms(existing, terms):
        raise PayoutConflict()
    return existing, False


async def certificate(conn: Connection, payout_id: str, tenant_id: str | None) -> dict[str, Any] | None:
    """The certificate of the payout's latest succeeded attempt's effect, None when there is none
    (seed 001; API.md "Shapes"); 404 ``payout.not_found`` for an unknown payout and, as
    :func:`get_payout`, for another tenant's (``tenant_id`` None: any tenant's, for operators)."""
    row = await fetch_one(conn, _SQL["certificate_attempt"], {"payout_id": payout_id})
    if row is None or (tenant_id is not None and row["tenant_id"] != tenant_id):
        raise PayoutNotFound()
    return None if row["attempt_id"] is None else await certificate_of(conn, row["attempt_id"])


async def get_payout(conn: Connection, payout_id: str, tenant_id: str | None, *, lock: bool = False) -> dict[str, Any]:
    """The payout; 404 for unknown ids and for another tenant's payouts (never reveal them)."""
    row = await fetch_one(conn, _SQL["lock_payout" if lock else "get_payout"], {"payout_id": payout_id})
    if row is None or (tenant_id is not None and row["tenant_id"] != tenant_id):
        raise PayoutNotFound()
    return row


def intent_of(record: dict[str, Any], requester_id: str) -> PayoutIntent:
    return PayoutIntent(
        payout_id=record["payout_id"], tenant_id=record["tenant_id"], requester_id=requester_id,
        beneficiary_id=record["beneficiary_id"], destination_id=record["destination_id"],
        destination_version=record["destination_version"], amount_minor=record["amount_minor"],
        currency=record["currency"], purpose=record["purpose"], payout_version=record["version"])


async def load_context(conn: Connection, payout_id: str, *, stage: Stage, requester: RequesterFacts,
                       now: datetime) -> LoadedContext:
    row = await fetch_one(conn, _SQL["context"], {"payout_id": payout_id, "now": now})
    if row is None:
        raise PayoutNotFound()
    tenant = None if row["settings_version"] is None else TenantFacts(
        payouts_suspended=row["payouts_suspended"], daily_limit_minor=row["daily_limit_minor"],
        paid_minor=row["paid_minor"], reserved_minor=row["reserved_minor"], settings_version=row["settings_version"])
    beneficiary = None if row["beneficiary_version"] is None else BeneficiaryFacts(
        tenant_id=row["beneficiary_tenant_id"], verified=row["verified"], status=row["beneficiary_status"],
        version=row["beneficiary_version"])
    destination = None if row["current_destination_version"] is None else DestinationFacts(
        beneficiary_id=row["destination_beneficiary_id"], version=row["current_destination_version"],
        changed_at=row["destination_changed_at"])
    payout = PayoutFacts(state=row["state"], version=row["version"], holds_reservation=row["reserved_for"] is not None,
                         has_unresolved_attempt=row["has_unresolved_attempt"], has_live_grant=row["has_live_grant"])
    acknowledged = frozenset({Reason.DESTINATION_RECENTLY_CHANGED}) if row["destination_change_acknowledged"] \
        else frozenset()
    context = PayoutContext(
        intent=intent_of(row, requester.actor_id if stage != "execute" else row["requester_id"]),
        observed_at=now, requester=requester, stage=stage, tenant=tenant, beneficiary=beneficiary,
        destination=destination, payout=payout, policy_version=row["policy_version"], acknowledged=acknowledged)
    return LoadedContext(context, row["settlement_date"])


async def reserve(conn: Connection, record: dict[str, Any], settlement_date: date | None) -> bool:
    """Reserve the payout's amount against its settlement date's limit; False when it would not fit."""
    params = {"tenant_id": record["tenant_id"], "settlement_date": settlement_date,
              "amount_minor": record["amount_minor"]}
    await conn.execute(_SQL["ensure_daily_totals"], params)
    return await fetch_one(conn, _SQL["reserve"], params) is not None


async def release_reservation(conn: Connection, payout_id: str, *, paid: bool = False) -> None:
    """Give the payout's reservation back to its day, or move it to paid (no-op without one)."""
    await conn.execute(_SQL["release_reservation"], {"payout_id": payout_id, "paid": paid})


async def follow_attempt(conn: Connection, now: datetime, payout_id: str, attempt_id: Any,
                         state: str) -> dict[str, Any] | None:
    """Move the payout to the state its active attempt's resolution leaves behind."""
    return await fetch_one(conn, _SQL["resolve_payout"], {
        "payout_id": payout_id, "attempt_id": attempt_id, "state": state, "now": now})


async def cancel_payout(db: Database, now: datetime, payout_id: str, *, tenant_id: str, actor: str,
                        correlation_id: str) -> dict[str, Any]:
    async with db.transaction() as conn:
        before = await get_payout(conn, payout_id, tenant_id, lock=True)
        await release_reservation(conn, payout_id)
        row = await fetch_one(conn, _SQL["cancel_payout"], {"payout_id": payout_id, "now": now})
        if row is None:
            raise NotCancellable(f"the payout is {before['state']}")
        await history.append(conn, payout_id, "transition", actor=actor, now=now, correlation_id=correlation_id,
                             detail={"from": before["state"], "to": "Cancelled", "version": row["version"]})
        await resolve_by_key_prefix_of_payout(conn, EXPIRED_GRANT_PREFIX, payout_id, now, "payout cancelled")
    return row


async def acknowledge(conn: Connection, now: datetime, payout_id: str, *, reason_code: str, actor: str,
                      correlation_id: str) -> None:
    """Record an acknowledgment bound to the destination's current version (a later change needs another)."""
    row = await fetch_one(conn, _SQL["insert_acknowledgment"], {
        "payout_id": payout_id, "reason_code": reason_code, "actor": actor, "now": now})
    if row is not None:
        await history.append(conn, payout_id, "acknowledgment", actor=actor, now=now, correlation_id=correlation_id,
                             detail={"reason_code": reason_code, "destination_version": row["destination_version"]})
