"""Reminders for open escalation episodes (seed 004, "Reminders").

A sweep reads the due open episodes; for each, one transaction runs the conditional claim
(``reminder_count + 1`` and the next ``next_reminder_at``, only where ``next_reminder_at`` is still
what the sweep read) and only the instance whose claim changed the row queues the operator alert
``escalation:<id>:reminder:<n>`` (``ON CONFLICT DO NOTHING``). Two job instances racing one episode
therefore send one reminder; an acknowledgement or a resolution in between makes the claim match
nothing. Interval: ``reminder_interval_s`` before acknowledgement, ``acknowledged_reminder_interval_s``
after; an acknowledged but unresolved episode keeps reminding.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import structlog

from gateway.clock import Clock
from gateway.escalations.store import queue_alert
from gateway.settings import Settings
from gateway.store.db import Connection, Database, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.escalations")

SWEEP_LIMIT = 200

log = structlog.get_logger("gateway.escalations")


async def claim_reminder(conn: Connection, escalation_id: int, read_next_reminder_at: datetime, now: datetime,
                         settings: Settings) -> int | None:
    """In the caller's transaction: claim the episode's next reminder and queue its alert.
    The reminder's number, or None when another instance (or an operator) got there first."""
    claimed = await fetch_one(conn, _SQL["claim_reminder"], {
        "escalation_id": escalation_id,
        "read_next_reminder_at": read_next_reminder_at,
        "now": now,
        "reminder_interval": timedelta(seconds=settings.reminder_interval_s),
        "acknowledged_interval": timedelta(seconds=settings.acknowledged_reminder_interval_s),
    })
    if claimed is None:
        return None
    number = int(claimed["reminder_count"])
    await queue_alert(conn, escalation_id=escalation_id, escalation_key=claimed["escalation_key"],
                      reason=claimed["reason"], attempt_id=claimed["attempt_id"], details=claimed["details"],
                      now=now, reminder=number)
    return number


async def send_due_reminders(db: Database, clock: Clock, settings: Settings, *, limit: int = SWEEP_LIMIT) -> int:
    """One sweep: queue a reminder for every due open episode this instance wins; how many it sent."""
    due = await db.fetch_all(_SQL["due_reminders"], {"now": clock.now(), "limit": limit})
    sent = 0
    for episode in due:
        async with db.transaction() as conn:
            number = await claim_reminder(conn, episode["escalation_id"], episode["next_reminder_at"],
                                          clock.now(), settings)
        if number is not None:
            sent += 1
            log.info("escalation_reminder_queued", escalation_id=episode["escalation_id"], reminder=number)
    return sent
