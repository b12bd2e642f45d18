"""The gauges ``/metrics`` reads from the database (``gauges.sql``): the fleet-wide truth, a few
cheap statements per scrape on one connection; the clock's now is a parameter like everywhere."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import sql

from gateway.domain.attempt_kinds import KINDS, Kind, escalating_kinds, granted_kinds, pipeline_kinds
from gateway.store.db import Database, fetch_all
from gateway.store.per_kind import per_kind
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.store", "gauges.sql")
# Unknown attempts by age (seed 000 section 21): a minute to three days, in seconds.
AGE_BOUNDS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 43200.0, 86400.0, 259200.0)

Rows = list[dict[str, Any]]


def _per_kind(block: str, kinds: tuple[Kind, ...]) -> sql.Composed:
    return per_kind(_SQL[block], kinds)


def grant_gauges(kinds: tuple[Kind, ...]) -> sql.Composed:
    """Expired-unused and due-unclaimed grants per operation of each granted kind of ``kinds``."""
    granted = granted_kinds(kinds)
    return sql.SQL(_SQL["grant_gauges"]).format(
        operations=sql.SQL(", ").join(sql.SQL("({})").format(sql.Literal(kind.grant_operation)) for kind in granted),
        expired=_per_kind("kind_grants_expired", granted), due=_per_kind("kind_grants_due", granted))


def open_escalations(kinds: tuple[Kind, ...]) -> sql.Composed:
    """Open episodes per reason and kind: an episode is a kind's when its key starts with the
    kind's escalation family or its reason with one of the kind's reason prefixes."""
    def when(kind: Kind) -> sql.Composed:
        tests = [sql.SQL("starts_with(escalation_key, {})").format(sql.Literal(kind.escalation_family)),
                 *(sql.SQL("starts_with(reason, {})").format(sql.Literal(r)) for r in kind.escalation_reasons)]
        return sql.SQL("WHEN {} THEN {}").format(sql.SQL(" OR ").join(tests), sql.Literal(kind.name))
    return sql.SQL(_SQL["open_escalations"]).format(kind_of=sql.SQL(" ").join(map(when, escalating_kinds(kinds))))


DATABASE_GAUGES = sql.Composed([sql.SQL(_SQL["database_gauges"]), sql.SQL(" UNION ALL "), grant_gauges(KINDS)])
PIPELINE_GAUGES = _per_kind("kind_pipeline_gauges", pipeline_kinds())
UNKNOWN_AGES = sql.Composed([_per_kind("kind_unknown_ages", KINDS), sql.SQL(" ORDER BY series, bound")])
# The Overview's Unknown attempts per kind with the oldest one's send time (gateway.store.overview).
UNKNOWN_OLDEST = _per_kind("kind_unknown_oldest", KINDS)
# Open escalations per reason and kind, for /metrics and the Overview.
OPEN_ESCALATIONS = open_escalations(KINDS)


@dataclass(frozen=True)
class DatabaseGauges:
    gauges: Rows  # (name, labels, value): one sample each
    unknown_ages: Rows  # (series, bound, le, value, age_sum): cumulative buckets per series
    outbox: Rows  # (kind, pending, lag, dead) per outbox message kind
    escalations: Rows  # (reason, kind, open, oldest) per open reason


async def database_gauges(db: Database, now: datetime) -> DatabaseGauges:
    bounds = [*AGE_BOUNDS, float("inf")]
    async with db.connection() as conn:
        gauges = await fetch_all(conn, DATABASE_GAUGES, {"now": now})
        gauges += await fetch_all(conn, PIPELINE_GAUGES, {"now": now})
        ages = await fetch_all(conn, UNKNOWN_AGES, {
            "now": now, "bounds": bounds, "le": ["+Inf" if b == float("inf") else repr(b) for b in bounds]})
        outbox = await fetch_all(conn, _SQL["outbox_kinds"], {"now": now})
        escalations = await fetch_all(conn, OPEN_ESCALATIONS, {"now": now})
    return DatabaseGauges(gauges, ages, outbox, escalations)
