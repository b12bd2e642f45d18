"""The ``recover_attempts`` actor: the recovery loop (seed 004, "The Recovery Loop").

No arguments: every wake-up finds due attempts in PostgreSQL and claims each by lease, so any
number of workers on any number of machines may run it at once, and a lost or duplicated
wake-up changes nothing (see :mod:`gateway.recovery.loop`).
"""

from __future__ import annotations

import dramatiq

from gateway.payments.attempts import Attempts
from gateway.payments.client import PaymentClient
from gateway.recovery.loop import Recovery, worker_name
from jobs import runtime
from jobs.broker import QUEUE

# One recovery identity per worker process; every claim still gets a fresh lease token.
OWNER = worker_name()
BATCH = 100


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=600_000)
async def recover_attempts() -> None:
    """Run one pass over every due attempt, oldest due first, at most ``BATCH`` per wake-up."""
    current = await runtime.current()
    attempts = Attempts(current.db, current.clock, current.settings)
    client = PaymentClient(current.settings, current.clock, current.http)
    await Recovery(current.settings, current.clock, current.db, attempts, client, owner=OWNER).sweep(BATCH)
