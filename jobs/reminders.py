"""The ``send_reminders`` actor: reminders for open escalation episodes (seed 004, "Reminders").

No arguments: each wake-up finds the due episodes in PostgreSQL and claims each reminder with a
conditional update, so two workers racing one episode send one reminder
(see :mod:`gateway.escalations.reminders`).
"""

from __future__ import annotations

import dramatiq

from gateway.escalations.reminders import send_due_reminders
from jobs import runtime
from jobs.broker import QUEUE


@dramatiq.actor(queue_name=QUEUE, max_retries=0, time_limit=60_000)
async def send_reminders() -> None:
    """Queue the alert of every due reminder this worker wins."""
    current = await runtime.current()
    await send_due_reminders(current.db, current.clock, current.settings)
