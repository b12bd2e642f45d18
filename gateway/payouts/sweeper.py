"""The payout sweeper (seed 000, "Atomically Claim the Grant and the Payout": leases and recovery).

- An unused grant past its window moves to Expired and its reservation is released.
- An attempt whose owner's lease lapsed is fenced first (its epoch incremented, conditional on the
  epoch read), then classified from durable state: Claimed provably sent nothing and becomes
  NotStarted (the payout returns to Approved, awaiting fresh authority); Started may have been
  sent, or may still be, and becomes Unknown for the reconciler. Never the other way round.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog

from gateway.clock import Clock
from gateway.domain.payout_outcomes import AttemptState
from gateway.payouts import attempts
from gateway.payouts.decisions import expire_grants
from gateway.store.db import Database, fetch_all
from gateway.store.queries import load_queries

_DECISIONS = load_queries("gateway.payouts", "decisions.sql")
ACTOR = "payout-sweeper"
BATCH = 100
log = structlog.get_logger("gateway.payouts")


async def sweep_once(db: Database, clock: Clock) -> dict[str, int]:
    now = clock.now()
    async with db.transaction() as conn:
        expired = await fetch_all(conn, _DECISIONS["expire_lapsed_grants"], {"now": now, "limit": BATCH})
        await expire_grants(conn, now, expired)
    fenced = 0
    for lapsed in await attempts.lapsed_leases(db, now, BATCH):
        fenced += await _fence_and_classify(db, now, lapsed)
    if expired or fenced:
        log.info("payout_sweep", grants_expired=len(expired), attempts_fenced=fenced)
    return {"grants_expired": len(expired), "attempts_fenced": fenced}


async def _fence_and_classify(db: Database, now: datetime, lapsed: dict[str, Any]) -> int:
    was_claimed = lapsed["state"] == AttemptState.CLAIMED.value
    state = AttemptState.NOT_STARTED if was_claimed else AttemptState.UNKNOWN
    async with db.transaction() as conn:
        attempt = await attempts.fence_lapsed(conn, now, lapsed)
        if attempt is None:  # the owner wrote first, or another sweeper fenced it
            return 0
        await attempts.resolve(conn, now, attempt, state, "lease.lapsed", actor=ACTOR,
                               from_states=[AttemptState(str(lapsed["state"]))],
                               next_check_at=None if was_claimed else now)
    return 1
