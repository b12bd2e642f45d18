"""The grants sweep: due grants published again, unused grants expired and escalated
(docs/decisions/0022 and 0023).

Once a grant's outbox row is dispatched its job is a broker message, delayed until ``not_before``
and held by the broker and by the worker that prefetched it; a flushed or restarted broker, or a
killed worker, loses it. PostgreSQL stays the one source of truth for due work:

- ``PAYOUT_JOBS`` and ``RECALL_JOBS`` name every Issued grant inside its window that nobody has
  claimed or refused (redelivery's ``due_grants``; ``due_recall_grants`` here), and
  :mod:`gateway.redelivery.republish` publishes its job again on every sweep, paced. Two messages
  for one grant are harmless: validation refuses a consumed grant, and of two racing claims one
  wins (seed 000 sections 7 and 10).
- :func:`expire_unused` moves grants whose window closed unclaimed to Expired (seed 000 section 6;
  a payout grant's reservation is released) and, where the payout still waits for the work
  (a payout still Approved, a recall of a payout still Paid), raises the escalation
  ``payout-grant:<id>:expired-unused`` or ``payout-recall-grant:<id>:expired-unused`` in the same
  transaction, so it is raised once per grant; its details explain the expiry (publications,
  last refused delivery). The next decision on the payout closes it. ``/metrics`` counts expired
  grants (seed 000 section 21, "Grants issued but never consumed").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from psycopg import sql

from gateway.clock import Clock
from gateway.escalations.store import raise_escalation
from gateway.payouts import config, recalls, records
from gateway.payouts.attempts import PAYOUT
from gateway.pipeline.kind import AttemptKind
from gateway.redelivery.republish import DueJobs, grant_jobs
from gateway.settings import Settings
from gateway.store.db import Connection, Database, fetch_all
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "grant_sweep.sql")
ACTOR = "payout-grant-sweeper"
EXPIRED_UNUSED = "grant-expired-unused"
BATCH = 100
log = structlog.get_logger("gateway.payouts")

PAYOUT_JOBS = grant_jobs(config.JOB_KIND, grants="payout_grants", decisions="payout_decisions",
                         history="payout_history", parent="payout_id")
RECALL_JOBS = DueJobs(recalls.JOB_KIND, sql.SQL(_SQL["due_recall_grants"]))


@dataclass(frozen=True)
class GrantKind:
    """An attempt kind's grants as the sweep sees them; the table, operation and evidence writer
    come from the pipeline's kind description."""

    attempts: AttemptKind
    job_kind: str
    key_prefix: str  # the escalation key before '<grant_id>:expired-unused'
    waiting_state: str  # the payout state in which an unused grant leaves work undone
    holds_reservation: bool  # a payout grant holds the day's reservation; a recall grant none
    expire: sql.Composed = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "expire", sql.SQL(_SQL["expire_unused_grants"]).format(
            grants=sql.Identifier(str(self.attempts.rows.grants))))


KINDS = (GrantKind(PAYOUT, config.JOB_KIND, config.EXPIRED_GRANT_PREFIX, "Approved", holds_reservation=True),
         GrantKind(recalls.RECALL, recalls.JOB_KIND, recalls.EXPIRED_GRANT_PREFIX, "Paid", holds_reservation=False))


async def expire_unused(db: Database, clock: Clock, settings: Settings, *, limit: int = BATCH) -> int:
    """Expire every grant whose window closed unclaimed; escalate those whose payout still waits.
    One transaction per kind's batch: the expiry, its evidence and its escalation commit together."""
    now = clock.now()
    total = 0
    for kind in KINDS:
        async with db.transaction() as conn:
            expired = await fetch_all(conn, kind.expire, {"now": now, "limit": limit, "job_kind": kind.job_kind})
            for grant in expired:
                await _record(conn, now, kind, grant)
                if grant["payout_state"] == kind.waiting_state:
                    await _escalate(conn, now, kind, grant, settings.reminder_interval_s)
        total += len(expired)
    return total


async def _record(conn: Connection, now: datetime, kind: GrantKind, grant: dict[str, Any]) -> None:
    """Seed 000 section 6: "Its daily-limit reservation is released when the unused grant is
    atomically moved to Expired"; the transition is evidence in the payout's history."""
    if kind.holds_reservation:
        await records.release_reservation(conn, grant["payout_id"])
    await kind.attempts.history(conn, grant["payout_id"], "transition", actor=ACTOR, now=now,
                                grant_id=grant["grant_id"], detail={"grant_state": "Expired"})


async def _escalate(conn: Connection, now: datetime, kind: GrantKind, grant: dict[str, Any],
                    reminder_interval_s: float) -> None:
    """Seed 000 section 21: "Grants issued but never consumed. Payouts that missed their window and
    are waiting for a fresh decision." Identifiers and reason codes only."""
    await raise_escalation(conn, escalation_key=f"{kind.key_prefix}{grant['grant_id']}:expired-unused",
                           reason=EXPIRED_UNUSED, now=now, reminder_interval_s=reminder_interval_s,
                           details={"operation": kind.attempts.operation, "payout_id": grant["payout_id"],
                                    "grant_id": str(grant["grant_id"]), "payout_state": grant["payout_state"],
                                    "not_before": grant["not_before"].isoformat(),
                                    "expires_at": grant["expires_at"].isoformat(),
                                    "republications": grant["publications"] or 0,
                                    "last_refusal": grant["last_refusal"]})
    log.warning("payout_grant_expired_unused", operation=kind.attempts.operation, payout_id=grant["payout_id"],
                grant_id=str(grant["grant_id"]), republications=grant["publications"] or 0,
                last_refusal=grant["last_refusal"])
