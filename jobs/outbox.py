"""The ``dispatch_outbox`` actor: the outbox dispatcher (seed 004, "Downstream Work").

It carries no arguments: every wake-up finds the eligible rows in PostgreSQL and claims them with
``FOR UPDATE SKIP LOCKED``, so any number of workers on any number of machines may run it at once,
and a lost or duplicated message changes nothing (see :mod:`gateway.outbox.dispatcher`).
"""

from __future__ import annotations

import dramatiq

from gateway.outbox.delivery import Publisher
from gateway.outbox.dispatcher import dispatch_due
from jobs import payouts, refunds, runtime  # noqa: F401  (importing them registers each kind's publisher)
from jobs.attempts import publishers
from jobs.broker import QUEUE

# Outbox kinds that become job messages instead of HTTP deliveries: one per pipeline kind.
PUBLISHERS: dict[str, Publisher] = publishers()


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=300_000)
async def dispatch_outbox() -> None:
    """Deliver every eligible outbox row, in order per ordering key."""
    current = await runtime.current()
    await dispatch_due(current.db, current.clock, current.settings, current.outbox, publishers=PUBLISHERS)
