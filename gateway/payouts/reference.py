"""Reference data: tenants, beneficiaries, destinations and policy releases (API.md, Payouts,
"Reference data"). Each upsert bumps a version only when a policy-relevant field changes; the
worker's claim fences on these versions (seed 000, "Atomically Claim the Grant and the Payout")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import psycopg

from gateway.domain.errors import RequestInvalid
from gateway.payouts import history
from gateway.store.db import Connection, Database, constraint_of, fetch_all, fetch_one, fetch_required
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "reference.sql")

POLICY_OPERATIONS = ("payout.submit", "payout.recall")
_REFERENCED = {"beneficiaries_tenant_id_fkey": "tenant", "destinations_beneficiary_id_fkey": "beneficiary"}


@asynccontextmanager
async def _transaction(db: Database) -> AsyncIterator[Connection]:
    """A transaction whose foreign-key failures become 422s (STYLE, example 3: by constraint name)."""
    try:
        async with db.transaction() as conn:
            yield conn
    except psycopg.errors.ForeignKeyViolation as error:
        missing = _REFERENCED.get(constraint_of(error) or "", "record")
        raise RequestInvalid(f"the referenced {missing} does not exist") from None


async def _upsert(db: Database, query: str, params: dict[str, Any]) -> dict[str, Any]:
    async with _transaction(db) as conn:
        return await fetch_required(conn, _SQL[query], params)


async def upsert_tenant(db: Database, now: datetime, tenant_id: str, *, daily_limit_minor: int, currency: str,
                        payouts_suspended: bool, settlement_time_zone: str) -> dict[str, Any]:
    return await _upsert(db, "upsert_tenant", {
        "tenant_id": tenant_id, "daily_limit_minor": daily_limit_minor, "currency": currency,
        "payouts_suspended": payouts_suspended, "settlement_time_zone": settlement_time_zone, "now": now})


async def upsert_beneficiary(db: Database, now: datetime, beneficiary_id: str, *, tenant_id: str, verified: bool,
                             status: str) -> dict[str, Any]:
    return await _upsert(db, "upsert_beneficiary", {
        "beneficiary_id": beneficiary_id, "tenant_id": tenant_id, "verified": verified, "status": status,
        "now": now})


async def upsert_destination(db: Database, now: datetime, destination_id: str, *, beneficiary_id: str,
                             provider_token: str, actor: str) -> dict[str, Any]:
    """Register or change a destination; a change moves every Draft or Approved payout's version.
    ``now`` is the registration time for a new destination (the demo registers one in the past)."""
    async with _transaction(db) as conn:
        return await _write_destination(conn, now, destination_id, beneficiary_id, provider_token, actor)


async def _write_destination(conn: Connection, now: datetime, destination_id: str, beneficiary_id: str,
                             provider_token: str, actor: str) -> dict[str, Any]:
    before = await fetch_one(conn, _SQL["lock_destination"], {"destination_id": destination_id})
    row = await fetch_required(conn, _SQL["upsert_destination"], {
        "destination_id": destination_id, "beneficiary_id": beneficiary_id, "provider_token": provider_token,
        "now": now})
    if before is not None and before["version"] != row["version"]:
        moved = await fetch_all(conn, _SQL["bump_payouts_of_destination"],
                                {"destination_id": destination_id, "now": now})
        for payout in moved:
            await history.append(conn, payout["payout_id"], "transition", actor=actor, now=now, detail={
                "cause": "destination.changed", "destination_id": destination_id,
                "destination_version": row["version"], "state": payout["state"], "version": payout["version"]})
    return row


async def publish_policy(db: Database, now: datetime, operation: str, version: str) -> dict[str, Any]:
    return await _upsert(db, "publish_policy", {"operation": operation, "version": version, "now": now})
