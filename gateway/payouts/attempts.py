"""Payout attempts: the payout instance of the attempt pipeline (gateway.pipeline; seed 000,
"Atomically Claim the Grant and the Payout" and "Classify the Outcome").

The claim is one transaction: the context fence (tenant settings, beneficiary, destination and
policy release at the versions validation read, each ``FOR SHARE``), the grant consumed by the
one clock's now, the payout moved to Executing and the attempt created as Claimed on the account
new payouts use (``config.payout_account``), with its client reference ``<payout_id>-a<N>``,
idempotency key ``payout-<payout_id>-a<N>``, send deadline, lease and seed 001 effect record. Any
check that fails rolls all of it back. Every later write is the pipeline's; what it does to the
payout (:func:`_follow`: the payout follows the attempt, the daily-limit reservation is spent or
released) and the ``return`` event are this module's.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from gateway.domain import attempt_kinds
from gateway.domain.effect_manifest import Transport, payout_manifest
from gateway.domain.outcomes import FINAL_AFTER_CLAIM, PAYOUT_STATE_AFTER, AttemptState
from gateway.domain.payout_policy import ContextVersions
from gateway.payouts import history, records
from gateway.payouts.config import AUDIENCE, OPERATION, attempt_timings, payout_account
from gateway.payouts.governance import persist_payout
from gateway.payouts.validation import PayoutJob, Valid, Validation, validate
from gateway.pipeline.kind import AttemptKind, Claimed, Presenter, Refused
from gateway.pipeline.rows import Rows
from gateway.providers.base import destination_digest
from gateway.settings import Settings
from gateway.store.db import Connection, Database, fetch_all, fetch_one, fetch_required
from gateway.store.queries import load_queries

ROWS = Rows(attempt_kinds.PAYOUT.attempts, "payout_grants", "provider_payout_id",
            "one_payout_attempt_per_provider_payout")
_SQL = load_queries("gateway.payouts", "attempts.sql")
EXECUTOR = Presenter("svc-payout-worker", frozenset({AUDIENCE}))


def client_reference(payout_id: str, attempt_number: int) -> str:
    return f"{payout_id}-a{attempt_number}"


def idempotency_key(payout_id: str, attempt_number: int) -> str:
    """Derived from the payout and the authoritative attempt number only: never from a
    correlation, message or grant id (seed 000, "Identifiers: One Per Question")."""
    return f"payout-{payout_id}-a{attempt_number}"


class _Rollback(Exception):
    def __init__(self, code: str) -> None:
        self.code = code


async def _admit(db: Database, now: datetime, job: PayoutJob, presenter: Presenter) -> Validation:
    return await validate(PAYOUT, db, now, job, presenter)


async def claim(db: Database, now: datetime, settings: Settings, valid: Valid, worker_id: str) -> Claimed | Refused:
    """The atomic claim. Raises whatever the commit raises: the caller treats that as unconfirmed."""
    grant, payout, versions = valid.grant, valid.payout, valid.versions
    timings, account = attempt_timings(settings), payout_account(settings)
    pepper = settings.token_pepper.get_secret_value()
    attempt_id = uuid.uuid4()
    payout_id, number = payout["payout_id"], grant["attempt_number"]
    try:
        async with db.transaction() as conn:
            token = await _fence(conn, payout, versions)
            if not await ROWS.consume_grant(conn, now, grant["grant_id"], worker_id):
                raise _Rollback("claim.lost")
            moved = await fetch_one(conn, _SQL["claim_payout"], {
                "payout_id": payout_id, "version": grant["executable_payout_version"], "attempt_id": attempt_id,
                "now": now})
            if moved is None:
                raise _Rollback("claim.lost")
            attempt = await fetch_required(conn, _SQL["insert_attempt"], {
                "attempt_id": attempt_id, "payout_id": payout_id, "grant_id": grant["grant_id"],
                "decision_id": grant["decision_id"], "attempt_number": number, "provider_account": account.id,
                "client_reference": client_reference(payout_id, number),
                "idempotency_key": idempotency_key(payout_id, number), "amount_minor": payout["amount_minor"],
                "currency": payout["currency"], "destination_id": payout["destination_id"],
                "destination_version": versions.destination, "destination_digest": destination_digest(pepper, token),
                "worker_id": worker_id, "now": now, "send_deadline": timings.send_deadline(now),
                "lease_expires_at": timings.lease_expiry(now), "escalation_deadline": timings.escalation_deadline(now)})
            # Seed 001: the effect record commits with the claim.
            await persist_payout(PAYOUT, conn, attempt, token, account=account, now=now, actor=worker_id,
                                 reminder_interval_s=settings.reminder_interval_s)
            await history.append(conn, payout_id, "transition", actor=worker_id, now=now, attempt_id=attempt_id,
                                 grant_id=grant["grant_id"], decision_id=grant["decision_id"],
                                 detail={"from": "Approved", "to": "Executing", "version": moved["version"],
                                         "attempt_state": "Claimed", "attempt_number": number,
                                         "lease_epoch": attempt["lease_epoch"]})
    except _Rollback as lost:
        return Refused(lost.code, grant)
    return Claimed(attempt, token)


async def _fence(conn: Connection, payout: dict[str, Any], versions: ContextVersions) -> str:
    checks = (("fence_tenant", {"tenant_id": payout["tenant_id"], "version": versions.tenant_settings}),
              ("fence_beneficiary", {"beneficiary_id": payout["beneficiary_id"], "version": versions.beneficiary}),
              ("fence_policy", {"version": versions.policy}))
    for name, params in checks:
        if await fetch_one(conn, _SQL[name], params) is None:
            raise _Rollback("claim.context-changed")
    destination = await fetch_one(conn, _SQL["fence_destination"], {
        "destination_id": payout["destination_id"], "version": versions.destination})
    if destination is None:
        raise _Rollback("claim.context-changed")
    return str(destination["provider_token"])


async def _follow(conn: Connection, now: datetime, attempt: dict[str, Any], state: AttemptState) -> dict[str, Any]:
    """The payout and its reservation follow the attempt in the resolving transaction. Started
    after Unknown (a processing notification) moves the payout back to Executing; after Started
    the payout is already there and nothing changes."""
    if state in FINAL_AFTER_CLAIM:
        await records.release_reservation(conn, attempt["payout_id"], paid=state is AttemptState.SUCCEEDED)
    payout = await records.follow_attempt(conn, now, attempt["payout_id"], attempt["attempt_id"],
                                          PAYOUT_STATE_AFTER[state])
    return {"to": payout["state"] if payout else None, "version": payout["version"] if payout else None}


async def record_return(conn: Connection, now: datetime, attempt: dict[str, Any], actor: str,
                        marked: bool = False) -> bool:
    """The ``return`` event of a Succeeded attempt whose payout came back, once: False when it was
    already recorded. ``marked``: the resolution that wrote Succeeded stored the status itself."""
    if not marked and await fetch_one(conn, _SQL["record_return"], {"attempt_id": attempt["attempt_id"]}) is None:
        return False
    await history.append(conn, attempt["payout_id"], "return", actor=actor, now=now,
                         attempt_id=attempt["attempt_id"], detail={"provider_payout_id": attempt["provider_payout_id"]})
    return True


def _manifest(transport: Transport, body: dict[str, Any], attempt: dict[str, Any]) -> dict[str, Any]:
    return payout_manifest(transport, body, destination_id=attempt["destination_id"],
                           destination_version=attempt["destination_version"])


PAYOUT = AttemptKind(
    name=attempt_kinds.PAYOUT.name, operation=OPERATION, parent="payout_id", rows=ROWS, history=history.append,
    admit=_admit, claim=claim, manifest=_manifest, timings=attempt_timings, follow=_follow, record_return=record_return,
    # One record, for this attempt's destination (by digest: the token is never held).
    identity=lambda attempt, record: record.get("destination_digest") == attempt["destination_digest"],
    secret_matches=lambda pepper, attempt, token: token is not None
    and destination_digest(pepper, token) == attempt["destination_digest"],
    attempt_fields=("attempt_id", "attempt_number", "state", "grant_id", "decision_id", "client_reference",
                    "idempotency_key", "amount_minor", "currency", "claimed_at", "started_at", "send_deadline",
                    "sends", "provider_payout_id", "provider_status", "outcome_reason", "resolved_at"),
    evidence=_SQL["effect_evidence"],
)


async def attempts_of_payout(conn: Connection, payout_id: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, _SQL["attempts_of_payout"], {"payout_id": payout_id})
