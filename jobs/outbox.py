"""The ``dispatch_outbox`` actor: the outbox dispatcher (seed 004, "Downstream Work").

It carries no arguments: every wake-up finds the eligible rows in PostgreSQL and claims them with
``FOR UPDATE SKIP LOCKED``, so any number of workers on any number of machines may run it at once,
and a lost or duplicated message changes nothing (see :mod:`gateway.outbox.dispatcher`).
"""

from __future__ import annotations

import dramatiq

from gateway.outbox.delivery import Publisher
from gateway.outbox.dispatcher import dispatch_due
from jobs import runtime
from jobs.broker import QUEUE
from jobs.payouts import publish_payout_job, publish_payout_recall_job
from jobs.refunds import publish_payment_refund_job

# Outbox kinds that become job messages instead of HTTP deliveries.
PUBLISHERS: dict[str, Publisher] = {"payout-job": publish_payout_job,
                                    "payout-recall-job": publish_payout_recall_job,
                                    "payment-refund-job": publish_payment_refund_job}


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=300_000)
async def dispatch_outbox() -> None:
    """Deliver every eligible outbox row, in order per ordering key."""
    current = await runtime.current()
    await dispatch_due(current.db, current.clock, current.settings, current.outbox, publishers=PUBLISHERS)
