"""The ``expire_unused_grants`` actor (docs/decisions/0023): payout and recall
grants whose window closed unclaimed become Expired, and those whose payout still waits are
escalated once (see :mod:`gateway.payouts.grant_sweep`). No arguments: the work is found in
PostgreSQL by the one clock's now; a lost or duplicated wake-up changes nothing."""

from __future__ import annotations

import dramatiq

from gateway.payouts.grant_sweep import expire_unused
from jobs import runtime
from jobs.broker import QUEUE


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=60_000)
async def expire_unused_grants() -> None:
    current = await runtime.current()
    await expire_unused(current.db, current.clock, current.settings)
