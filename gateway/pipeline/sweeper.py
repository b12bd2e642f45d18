"""The lease sweeper of every attempt kind (seed 000, "Atomically Claim the Grant and the Payout":
leases and recovery).

An attempt whose owner's lease lapsed is fenced first (its epoch incremented, conditional on the
epoch read), then classified from durable state: Claimed provably sent nothing and becomes
NotStarted (the parent awaits fresh authority); Started may have been sent, or may still be, and
becomes Unknown for the reconciler. Never the other way round. Each fenced lease is counted
(``paygate_payout_leases_fenced``).
"""

from __future__ import annotations

from datetime import datetime

from gateway.clock import Clock
from gateway.domain.outcomes import AttemptState
from gateway.pipeline import signals, transitions
from gateway.pipeline.kind import AttemptKind, Row
from gateway.store.db import Database

BATCH = 100


async def sweep_leases(kind: AttemptKind, db: Database, clock: Clock) -> int:
    """Fence and classify every lapsed lease of ``kind``; how many were fenced."""
    now = clock.now()
    fenced = 0
    for lapsed in await kind.rows.lapsed_leases(db, now, BATCH):
        fenced += await _fence_and_classify(kind, db, now, lapsed)
    return fenced


async def _fence_and_classify(kind: AttemptKind, db: Database, now: datetime, lapsed: Row) -> int:
    was_claimed = lapsed["state"] == AttemptState.CLAIMED.value
    state = AttemptState.NOT_STARTED if was_claimed else AttemptState.UNKNOWN
    async with db.transaction() as conn:
        attempt = await kind.rows.fence_lapsed(conn, now, lapsed)
        if attempt is None:  # the owner wrote first, or another sweeper fenced it
            return 0
        await transitions.resolve(kind, conn, now, attempt, state, "lease.lapsed", actor=f"{kind.slug}-sweeper",
                                  from_states=[AttemptState(str(lapsed["state"]))],
                                  next_check_at=None if was_claimed else now)
    signals.fenced(kind, state.value)
    return 1
