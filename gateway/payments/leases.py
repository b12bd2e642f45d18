"""Recovery leases on payment attempts (seed 004, "The Recovery Loop": claim, finish, escalate and
finish, the never-sent close and the recovery send intent).

A lease is local coordination, weaker than it looks: it keeps two healthy workers off one attempt,
while the provider's idempotency contract within its key window makes any remaining overlap
harmless. Every write here is conditional on the owner, the fresh lease token and an unexpired
lease, and none changes the attempt's version except the never-sent close, which is a state change.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from psycopg.types.json import Jsonb

from gateway.clock import Clock
from gateway.effects.ledger import advance
from gateway.escalations.store import raise_escalation
from gateway.settings import Settings
from gateway.store.db import Connection, Database, fetch_all, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payments", "leases.sql")
_ATTEMPT_SQL = load_queries("gateway.payments")


@dataclass(frozen=True)
class Lease:
    """This worker's claim on one attempt, and the schedule its pass leaves behind."""

    owner: str
    token: uuid.UUID
    expires_at: datetime
    next_delay_s: float        # when an unresolved pass is checked again
    escalated_delay_s: float   # the slower read-only cadence after an escalation

    def params(self, attempt_id: uuid.UUID, now: datetime) -> dict[str, Any]:
        return {"attempt_id": attempt_id, "owner": self.owner, "token": self.token, "now": now}


async def finish(conn: Connection, attempt_id: uuid.UUID, lease: Lease, now: datetime, delay_s: float) -> bool:
    """Schedule and release in one conditional write; False if the lease is no longer ours."""
    row = await fetch_one(conn, _SQL["finish"], {**lease.params(attempt_id, now),
                                                  "next_check_at": now + timedelta(seconds=delay_s)})
    return row is not None


async def append_event(conn: Connection, attempt_id: uuid.UUID, kind: str, actor: str, now: datetime,
                       detail: dict[str, Any]) -> None:
    await conn.execute(_SQL["append_event"], {"attempt_id": attempt_id, "kind": kind, "actor": actor,
                                              "now": now, "detail": Jsonb(detail)})


class Leases:
    def __init__(self, db: Database, clock: Clock, settings: Settings) -> None:
        self._db = db
        self._clock = clock
        self._settings = settings

    async def claim_due(self, limit: int, owner: str, passed: Collection[uuid.UUID] = (),
                        attempt_id: uuid.UUID | None = None, spent: Collection[str] = ()) -> list[dict[str, Any]]:
        """Up to ``limit`` due attempts not in ``passed`` nor of a ``spent`` account (only
        ``attempt_id``, if given), claimed by ``owner`` in one autocommit statement that skips the
        ones other workers are claiming (leases.sql ``claim_due``), each with ``passes`` and
        ``last_send_event``, in due order."""
        now = self._clock.now()
        rows = await self._db.fetch_all(_SQL["claim_due"], {
            "owner": owner, "now": now, "limit": limit, "passed": list(passed), "attempt_id": attempt_id,
            "spent": list(spent), "lease_expires_at": now + timedelta(seconds=self._settings.recovery_lease_s)})
        return sorted(rows, key=lambda row: (row["next_check_at"], row["created_at"], row["attempt_id"]))

    async def claim(self, attempt_id: uuid.UUID, owner: str) -> dict[str, Any] | None:
        """The claimed attempt, or None if it is not due or not free (a lost claim costs one round trip)."""
        claimed = await self.claim_due(1, owner, attempt_id=attempt_id)
        return claimed[0] if claimed else None

    async def defer(self, attempts: Collection[dict[str, Any]], owner: str) -> None:
        """Release the leases of claimed attempts whose passes wait for lookup tokens, in one
        statement, changing nothing else (leases.sql ``defer``)."""
        if attempts:
            async with self._db.connection() as conn:
                await conn.execute(_SQL["defer"], {"owner": owner,
                                                   "attempt_ids": [a["attempt_id"] for a in attempts],
                                                   "tokens": [a["lease_token"] for a in attempts]})

    async def finish(self, attempt_id: uuid.UUID, lease: Lease, delay_s: float,
                     event: tuple[str, dict[str, Any]] | None = None) -> bool:
        """finish(delay), optionally appending the pass's observation in the same transaction."""
        now = self._clock.now()
        async with self._db.transaction() as conn:
            if event is not None:
                await append_event(conn, attempt_id, event[0], lease.owner, now, event[1])
            return await finish(conn, attempt_id, lease, now, delay_s)

    async def escalate_and_finish(self, attempt: dict[str, Any], lease: Lease, reason: str, delay_s: float,
                                  event: tuple[str, dict[str, Any]] | None = None) -> bool:
        """In one transaction: re-read the attempt under lock; if it is still Started or Unknown and
        ours, raise ``attempt:<id>:<reason>`` (its alert only if that added an episode), schedule and
        release. A notification that resolved it meanwhile wins: nobody is alerted."""
        now = self._clock.now()
        attempt_id = attempt["attempt_id"]
        async with self._db.transaction() as conn:
            current = await fetch_one(conn, _SQL["lock_owned"], lease.params(attempt_id, now))
            if current is None or current["state"] not in ("Started", "Unknown"):
                return False
            if event is not None:
                await append_event(conn, attempt_id, event[0], lease.owner, now, event[1])
            await raise_escalation(conn, escalation_key=f"attempt:{attempt_id}:{reason}", reason=reason, now=now,
                                   reminder_interval_s=self._settings.reminder_interval_s, attempt_id=attempt_id,
                                   details={"client_reference": current["client_reference"],
                                            "provider_payment_id": current["provider_payment_id"],
                                            "escalation_deadline": current["escalation_deadline"].isoformat()
                                            if current["escalation_deadline"] else None})
            return await finish(conn, attempt_id, lease, now, delay_s)

    async def close_never_sent(self, attempt: dict[str, Any], lease: Lease) -> dict[str, Any] | None:
        """NotStarted -> NotApplied (never-sent), locking the order first; None if the endpoint
        moved it first (or the lease is gone)."""
        now = self._clock.now()
        async with self._db.transaction() as conn:
            await conn.execute(_ATTEMPT_SQL["lock_order"], {"order_id": attempt["order_id"]})
            closed = await fetch_one(conn, _SQL["close_never_sent"], {
                **lease.params(attempt["attempt_id"], now), "version": attempt["version"]})
            if closed is None:
                return None
            await append_event(conn, attempt["attempt_id"], "transition", lease.owner, now,
                               {"from": "NotStarted", "to": "NotApplied", "reason": "never-sent"})
            await advance(conn, attempt["attempt_id"], "NotApplied", actor=lease.owner, now=now)  # seed 001
            await conn.execute(_ATTEMPT_SQL["order_cancel_completed"], {"order_id": attempt["order_id"], "now": now})
            return closed

    async def commit_intent(self, attempt: dict[str, Any], lease: Lease,
                            observation: tuple[str, dict[str, Any]]) -> bool:
        """The recovery send intent (see leases.sql), committed with the lookup that found nothing;
        False when confirmed not committed. A database failure or unconfirmed commit raises: the
        write may have happened."""
        now = self._clock.now()
        async with self._db.transaction() as conn:
            await append_event(conn, attempt["attempt_id"], observation[0], lease.owner, now, observation[1])
            rows = await fetch_all(conn, _SQL["commit_intent"], {
                **lease.params(attempt["attempt_id"], now), "order_id": attempt["order_id"]})
        return bool(rows)

    async def abandon_send(self, attempt_id: uuid.UUID, lease: Lease, why: str) -> None:
        """send_abandoned: this worker chose not to dispatch after its intent. It resolves nothing."""
        now = self._clock.now()
        async with self._db.transaction() as conn:
            await append_event(conn, attempt_id, "send_abandoned", lease.owner, now, {"reason": why})

    async def order_state(self, order_id: str) -> str | None:
        row = await self._db.fetch_one(_SQL["order_state"], {"order_id": order_id})
        return None if row is None else str(row["state"])
