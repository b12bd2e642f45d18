"""Payout attempts: the atomic claim, the Started write, the send counter and every resolution
(seed 000, "Atomically Claim the Grant and the Payout" and "Classify the Outcome").

The claim is one transaction: the context fence (tenant settings, beneficiary, destination and
policy release at the versions validation read, each ``FOR SHARE``), the grant consumed by the
one clock's now, the payout moved to Executing and the attempt created as Claimed with its client
reference, idempotency key, send deadline and lease. Any check that fails rolls all of it back.
A resolution moves the attempt, the payout and the daily-limit reservation in one transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import structlog

from gateway.domain.payout_outcomes import PAYOUT_STATE_AFTER, AttemptState
from gateway.domain.payout_policy import ContextVersions
from gateway.domain.payout_timing import PayoutTimings
from gateway.effects.certify import Certifier
from gateway.effects.ledger import advance, escalation_key
from gateway.escalations.store import resolve_by_key_prefix
from gateway.payouts import history, records
from gateway.payouts.attempt_rows import AttemptRows
from gateway.store.db import Connection, Database, Statement, fetch_all, fetch_one, fetch_required
from gateway.store.queries import load_queries

ROWS = AttemptRows("payout", "payout_attempts", "payout_grants", "provider_payout_id")
_SQL: dict[str, Statement] = {**load_queries("gateway.payouts", "attempts.sql"), **ROWS.sql}
log = structlog.get_logger("gateway.payouts")

RELEASES = {AttemptState.FAILED, AttemptState.NOT_STARTED, AttemptState.NOT_APPLIED}
FINAL = RELEASES | {AttemptState.SUCCEEDED}


def client_reference(payout_id: str, attempt_number: int) -> str:
    return f"{payout_id}-a{attempt_number}"


def idempotency_key(payout_id: str, attempt_number: int) -> str:
    """Derived from the payout and the authoritative attempt number only: never from a
    correlation, message or grant id (seed 000, "Identifiers: One Per Question")."""
    return f"payout-{payout_id}-a{attempt_number}"


@dataclass(frozen=True)
class Claimed:
    attempt: dict[str, Any]
    destination_token: str  # held in memory by the executor; never written anywhere


@dataclass(frozen=True)
class NotClaimed:
    code: Literal["claim.lost", "claim.context-changed"]


class _Rollback(Exception):
    def __init__(self, code: Literal["claim.lost", "claim.context-changed"]) -> None:
        self.code = code


async def claim(db: Database, now: datetime, timings: PayoutTimings, *, grant: dict[str, Any],
                payout: dict[str, Any], versions: ContextVersions, worker_id: str, provider_account: str,
                digest: Callable[[str], str],
                record_effect: Callable[[Connection, dict[str, Any], str], Awaitable[object]]) -> Claimed | NotClaimed:
    """The atomic claim. Raises whatever the commit raises: the caller treats that as unconfirmed."""
    attempt_id = uuid.uuid4()
    payout_id, number = payout["payout_id"], grant["attempt_number"]
    try:
        async with db.transaction() as conn:
            token = await _fence(conn, payout, versions)
            if await fetch_one(conn, _SQL["consume_grant"], {
                    "grant_id": grant["grant_id"], "now": now, "worker_id": worker_id}) is None:
                raise _Rollback("claim.lost")
            moved = await fetch_one(conn, _SQL["claim_payout"], {
                "payout_id": payout_id, "version": grant["executable_payout_version"], "attempt_id": attempt_id,
                "now": now})
            if moved is None:
                raise _Rollback("claim.lost")
            attempt = await fetch_required(conn, _SQL["insert_attempt"], {
                "attempt_id": attempt_id, "payout_id": payout_id, "grant_id": grant["grant_id"],
                "decision_id": grant["decision_id"], "attempt_number": number, "provider_account": provider_account,
                "client_reference": client_reference(payout_id, number),
                "idempotency_key": idempotency_key(payout_id, number), "amount_minor": payout["amount_minor"],
                "currency": payout["currency"], "destination_id": payout["destination_id"],
                "destination_version": versions.destination, "destination_digest": digest(token),
                "worker_id": worker_id, "now": now, "send_deadline": timings.send_deadline(now),
                "lease_expires_at": timings.lease_expiry(now), "escalation_deadline": timings.escalation_deadline(now)})
            await record_effect(conn, attempt, token)  # seed 001 (issue 8): the effect record commits with the claim
            await history.append(conn, payout_id, "transition", actor=worker_id, now=now, attempt_id=attempt_id,
                                 grant_id=grant["grant_id"], decision_id=grant["decision_id"],
                                 detail={"from": "Approved", "to": "Executing", "version": moved["version"],
                                         "attempt_state": "Claimed", "attempt_number": number,
                                         "lease_epoch": attempt["lease_epoch"]})
    except _Rollback as lost:
        return NotClaimed(lost.code)
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


async def mark_started(db: Database, now: datetime, attempt: dict[str, Any], epoch: int) -> bool:
    """True only when the Started write is confirmed committed; any doubt means do not send."""
    async def record(conn: Connection) -> None:
        await history.append(conn, attempt["payout_id"], "transition", actor=attempt["claimed_by"], now=now,
                             attempt_id=attempt["attempt_id"],
                             detail={"attempt_state": "Started", "lease_epoch": epoch})
        await advance(conn, attempt["attempt_id"], "Started", actor=attempt["claimed_by"], now=now)  # issue 8
    return await ROWS.mark_started(db, now, attempt, epoch, record)


count_send = ROWS.count_send  # re-checks ownership and the send deadline right before a send


async def resolve(conn: Connection, now: datetime, attempt: dict[str, Any], state: AttemptState, reason: str, *,
                  actor: str, from_states: Sequence[AttemptState], epoch: int | None = None,
                  provider_payout_id: str | None = None, provider_status: str | None = None,
                  next_check_at: datetime | None = None, certifier: Certifier | None = None) -> dict[str, Any] | None:
    """Move the attempt, then its payout and reservation, in the caller's transaction; None when the
    attempt was no longer in ``from_states`` (or the epoch moved): nothing is written then."""
    row = await fetch_one(conn, _SQL["resolve_attempt"], {
        "attempt_id": attempt["attempt_id"], "state": state.value, "reason": reason, "now": now, "epoch": epoch,
        "from_states": [s.value for s in from_states], "provider_id": provider_payout_id,
        "provider_status": provider_status, "next_check_at": next_check_at})
    if row is None:
        return None
    payout_id = attempt["payout_id"]
    if state in FINAL:
        await records.release_reservation(conn, payout_id, paid=state is AttemptState.SUCCEEDED)
        # Seed 004, "Escalations": every writer that resolves an attempt resolves that attempt's
        # open escalations in the same transaction, so no reminder follows a settled payout.
        await resolve_by_key_prefix(conn, escalation_key("payout", attempt["attempt_id"], ""), now,
                                    f"payout attempt {state.value} ({reason}) by {actor}")
    # Started after Unknown (a processing notification) moves the payout back to Executing; after
    # Started the payout is already there and follow_attempt changes nothing.
    payout = await records.follow_attempt(conn, now, payout_id, attempt["attempt_id"], PAYOUT_STATE_AFTER[state])
    await history.append(conn, payout_id, "transition", actor=actor, now=now, attempt_id=attempt["attempt_id"],
                         detail={"attempt_state": state.value, "reason": reason,
                                 "provider_payout_id": row["provider_payout_id"],
                                 "to": payout["state"] if payout else None,
                                 "version": payout["version"] if payout else None})
    # Seed 001 (issue 8): the protocol follows the attempt; a confirmed effect is certified with ``certifier``.
    await advance(conn, attempt["attempt_id"], state.value, actor=actor, now=now, certifier=certifier, attempt=row)
    if provider_status == "returned":  # completed, then returned: a separate, later lifecycle event
        await record_return(conn, now, row, actor=actor, marked=True)
    log.info("payout_attempt_resolved", payout_id=payout_id, attempt_id=str(attempt["attempt_id"]),
             grant_id=str(attempt["grant_id"]), attempt_state=state.value, reason=reason, actor=actor)
    return row


async def record_return(conn: Connection, now: datetime, attempt: dict[str, Any], *, actor: str,
                        marked: bool = False) -> bool:
    """The ``return`` event of a Succeeded attempt whose payout came back, once: False when it was
    already recorded. ``marked``: the resolution that wrote Succeeded stored the status itself."""
    if not marked and await fetch_one(conn, _SQL["record_return"], {"attempt_id": attempt["attempt_id"]}) is None:
        return False
    await history.append(conn, attempt["payout_id"], "return", actor=actor, now=now,
                         attempt_id=attempt["attempt_id"], detail={"provider_payout_id": attempt["provider_payout_id"]})
    return True


async def lock_attempt(conn: Connection, provider_account: str, *, client_reference: str | None,
                       provider_payout_id: str | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The attempts a notification names by reference and by provider id, each locked, each None
    when that identifier is absent or matches nothing."""
    return await ROWS.lock_attempt(conn, provider_account, client_reference=client_reference,
                                   provider_id=provider_payout_id)


async def get_attempt(conn: Connection, attempt_id: uuid.UUID) -> dict[str, Any] | None:
    return await fetch_one(conn, _SQL["get_attempt"], {"attempt_id": attempt_id})


async def attempts_of_payout(conn: Connection, payout_id: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, _SQL["attempts_of_payout"], {"payout_id": payout_id})


attempt_of_grant = ROWS.attempt_of_grant
lapsed_leases = ROWS.lapsed_leases
fence_lapsed = ROWS.fence_lapsed  # increments the epoch of a lapsed attempt; None when its owner wrote first
due_checks = ROWS.due_checks
