"""The payout sweeper (seed 000, "Atomically Claim the Grant and the Payout": leases and recovery).

- An unused grant past its window moves to Expired and its reservation is released.
- Lapsed attempt leases of payouts and recalls are fenced and classified by the pipeline's one
  lease sweeper (gateway.pipeline.sweeper): Claimed -> NotStarted, Started -> Unknown.
"""

from __future__ import annotations

import structlog

from gateway.clock import Clock
from gateway.payouts.attempts import PAYOUT
from gateway.payouts.decisions import expire_grants
from gateway.payouts.recalls import RECALL
from gateway.pipeline.sweeper import sweep_leases
from gateway.store.db import Database, fetch_all
from gateway.store.queries import load_queries

_DECISIONS = load_queries("gateway.payouts", "decisions.sql")
BATCH = 100
log = structlog.get_logger("gateway.payouts")


async def sweep_once(db: Database, clock: Clock) -> dict[str, int]:
    now = clock.now()
    async with db.transaction() as conn:
        expired = await fetch_all(conn, _DECISIONS["expire_lapsed_grants"], {"now": now, "limit": BATCH})
        await expire_grants(conn, now, expired)
    fenced = await sweep_leases(PAYOUT, db, clock)
    recalls_fenced = await sweep_leases(RECALL, db, clock)
    if expired or fenced or recalls_fenced:
        log.info("payout_sweep", grants_expired=len(expired), attempts_fenced=fenced,
                 recall_attempts_fenced=recalls_fenced)
    return {"grants_expired": len(expired), "attempts_fenced": fenced, "recall_attempts_fenced": recalls_fenced}
