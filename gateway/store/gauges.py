"""The gauges ``/metrics`` reads from the database (``gauges.sql``): the fleet-wide truth, a few
cheap statements per scrape on one connection; the clock's now is a parameter like everywhere."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import sql

from gateway.domain.attempt_kinds import KINDS, Kind, pipeline_kinds
from gateway.store.db import Database, fetch_all
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.store", "gauges.sql")
# Unknown attempts by age (seed 000 section 21): a minute to three days, in seconds.
AGE_BOUNDS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 43200.0, 86400.0, 259200.0)

Rows = list[dict[str, Any]]


def _per_kind(block: str, kinds: tuple[Kind, ...]) -> sql.Composed:
    """``block`` for each of ``kinds`` (its name, attempts table and send column), joined by UNION ALL."""
    return sql.SQL(" UNION ALL ").join(
        sql.SQL("({})").format(sql.SQL(_SQL[block]).format(
            kind=sql.Literal(kind.name), attempts=sql.Identifier(kind.attempts), sent_at=sql.Identifier(kind.sent_at)))
        for kind in kinds)


PIPELINE_GAUGES = _per_kind("kind_pipeline_gauges", pipeline_kinds())
UNKNOWN_AGES = sql.Composed([_per_kind("kind_unknown_ages", KINDS), sql.SQL(" ORDER BY series, bound")])
# The Overview's Unknown attempts per kind with the oldest one's send time (gateway.store.overview).
UNKNOWN_OLDEST = _per_kind("kind_unknown_oldest", KINDS)


@dataclass(frozen=True)
class DatabaseGauges:
    gauges: Rows  # (name, labels, value): one sample each
    unknown_ages: Rows  # (series, bound, le, value, age_sum): cumulative buckets per series
    outbox: Rows  # (kind, pending, lag, dead) per outbox message kind
    escalations: Rows  # (reason, kind, open, oldest) per open reason


async def database_gauges(db: Database, now: datetime) -> DatabaseGauges:
    bounds = [*AGE_BOUNDS, float("inf")]
    async with db.connection() as conn:
        gauges = await fetch_all(conn, _SQL["database_gauges"], {"now": now})
        gauges += await fetch_all(conn, PIPELINE_GAUGES, {"now": now})
        ages = await fetch_all(conn, UNKNOWN_AGES, {
            "now": now, "bounds": bounds, "le": ["+Inf" if b == float("inf") else repr(b) for b in bounds]})
        outbox = await fetch_all(conn, _SQL["outbox_kinds"], {"now": now})
        escalations = await fetch_all(conn, _SQL["open_escalations"], {"now": now})
    return DatabaseGauges(gauges, ages, outbox, escalations)
