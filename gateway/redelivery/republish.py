"""Publishing due jobs again from the database (docs/decisions/0022).

PostgreSQL is the one source of truth for due work; the broker only carries wake-ups (DESIGN.md).
A job that starts through an outbox row (a payout or recall grant's ``payout-job`` /
``payout-recall-job``) is, once that row is dispatched, a Dramatiq message held in the broker and,
delayed, in a worker's memory: a flushed or restarted broker, or a killed worker, loses it. Each
kind therefore names its due work as a :class:`DueJobs` SELECT over its own tables, and every sweep
publishes each due subject's job again, through the same publisher its outbox row used, at most
once per ``pace`` (``claim_due`` in queries.sql). A duplicate message is harmless by construction:
the job's own single-use authority and atomic claim admit one execution (seed 000, "The Queue
Message Is Transport": "If someone copies the message, the second copy meets a consumed grant").

Each pipeline kind registers its ``DueJobs`` with its publisher (``jobs.attempts.job_of``), and
``jobs.redelivery.SOURCES`` lists them in the order of gateway.domain.attempt_kinds; its SELECT
must return only work that is due, not yet taken, and safe to offer again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import structlog
from psycopg import sql

from gateway.clock import Clock
from gateway.outbox.delivery import Publisher
from gateway.store.db import Database, fetch_all
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.redelivery")
BATCH = 500
log = structlog.get_logger("gateway.redelivery")


@dataclass(frozen=True)
class DueJobs:
    """One kind's due work: ``due`` selects ``subject_id`` (text), ``due_at`` and ``payload`` (the
    job's outbox payload, jsonb) of every subject whose job should run by ``%(now)s`` and has
    not been taken; ``kind`` is the outbox job kind whose publisher sends it."""

    kind: str
    due: sql.Composable
    statement: sql.Composed = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "statement", sql.SQL(_SQL["claim_due"]).format(due=self.due))


def grant_jobs(kind: str, *, grants: str, decisions: str, history: str, parent: str) -> DueJobs:
    """The due jobs of a kind authorized by single-use grants whose refusals its ``history`` table
    records as ``delivery`` events naming the grant (payouts, refunds): ``due_grants`` bound to its
    tables and its parent column (``payout_id``, ``order_id``), which is also its payload's key."""
    return DueJobs(kind, sql.SQL(_SQL["due_grants"]).format(
        grants=sql.Identifier(grants), decisions=sql.Identifier(decisions), history=sql.Identifier(history),
        parent=sql.Identifier(parent), parent_key=sql.Literal(parent)))


async def republish_due(db: Database, clock: Clock, sources: Sequence[DueJobs], publishers: Mapping[str, Publisher],
                        *, pace_s: float, limit: int = BATCH) -> dict[str, int]:
    """Publish the job of every due subject not published within ``pace_s``; per kind, how many.
    The publication is claimed and sent in one transaction: a broker that refuses the message
    rolls the claim back, so the next sweep tries again instead of waiting a pace."""
    published: dict[str, int] = {}
    for source in sources:
        publisher = publishers[source.kind]
        async with db.transaction() as conn:
            rows = await fetch_all(conn, source.statement, {
                "kind": source.kind, "now": clock.now(), "pace": timedelta(seconds=pace_s), "limit": limit})
            for row in rows:
                await asyncio.to_thread(publisher, row["payload"], clock)
        for row in rows:
            log.info("job_republished", kind=source.kind, subject_id=row["subject_id"],
                     publications=row["publications"])
        published[source.kind] = len(rows)
    return published
