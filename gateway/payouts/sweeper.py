"""The payout sweeper (seed 000, "Atomically Claim the Grant and the Payout": leases and recovery).

Lapsed attempt leases of payouts and recalls are fenced and classified by the pipeline's one lease
sweeper (gateway.pipeline.sweeper): Claimed -> NotStarted, Started -> Unknown. Unused grants are
expired, and escalated, by the grants sweep (gateway/payouts/grant_sweep.py).
"""

from __future__ import annotations

import structlog

from gateway.clock import Clock
from gateway.payouts.attempts import PAYOUT
from gateway.payouts.recalls import RECALL
from gateway.pipeline.sweeper import sweep_leases
from gateway.store.db import Database

log = structlog.get_logger("gateway.payouts")


async def sweep_once(db: Database, clock: Clock) -> dict[str, int]:
    fenced = await sweep_leases(PAYOUT, db, clock)
    recalls_fenced = await sweep_leases(RECALL, db, clock)
    if fenced or recalls_fenced:
        log.info("payout_sweep", attempts_fenced=fenced, recall_attempts_fenced=recalls_fenced)
    return {"attempts_fenced": fenced, "recall_attempts_fenced": recalls_fenced}
