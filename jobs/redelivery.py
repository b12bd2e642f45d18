"""The ``republish_due_jobs`` actor: due work the database publishes again (docs/decisions/0022).

No arguments: each wake-up asks PostgreSQL which jobs are due and untaken and publishes each one's
message again through the publisher its outbox row used, at most once per half clock tick per
subject (see :mod:`gateway.redelivery.republish`). So a broker that lost its data, or a worker that
died holding a delayed message, delays that work by one sweep and loses none.

Every pipeline kind's ``DueJobs`` is a source, registered with its publisher (jobs.attempts.job_of).
"""

from __future__ import annotations

import dramatiq

from gateway.redelivery.republish import DueJobs, republish_due
from jobs import runtime
from jobs.attempts import due_jobs
from jobs.broker import QUEUE
from jobs.outbox import PUBLISHERS

SOURCES: tuple[DueJobs, ...] = due_jobs()


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=60_000)
async def republish_due_jobs() -> None:
    """Publish the job of every due, untaken subject of every source once more."""
    current = await runtime.current()
    await republish_due(current.db, current.clock, SOURCES, PUBLISHERS, pace_s=current.settings.clock_tick_s / 2)
