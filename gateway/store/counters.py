"""The fleet's counters in PostgreSQL (docs/decisions/0041): each process flushes
the deltas it counted (``gateway.instruments``) into ``metric_counters``, and ``/metrics`` reads
the sums. A worker flushes after every message it handles, a web process every
``metrics_flush_s`` and before it answers a scrape, and both before they stop; so a crash loses at
most what one process counted since its last flush, and a flush whose commit failed is added to
the next one (a commit that failed after it happened counts twice: metrics, not evidence)."""

from __future__ import annotations

from typing import Any

import orjson
import structlog

from gateway import instruments
from gateway.clock import Clock
from gateway.store.db import Database
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.store", "counters.sql")
log = structlog.get_logger("gateway.metrics")


async def flush(db: Database) -> int:
    """Add this process's pending deltas to the fleet's sums; how many series it wrote."""
    taken = instruments.take()
    if not taken:
        return 0
    ordered = sorted(taken.items())
    try:
        async with db.transaction() as conn:
            await conn.execute(_SQL["add_counts"], {
                "names": [sample for (sample, _), _ in ordered],
                "labels": [orjson.dumps(dict(labels)).decode() for (_, labels), _ in ordered],
                "values": [value for _, value in ordered]})
    except Exception:
        instruments.give_back(taken)
        raise
    return len(ordered)


async def fleet_counts(db: Database) -> list[dict[str, Any]]:
    """Every series' sum over the fleet: ``name``, ``labels`` (a dict), ``value``."""
    return await db.fetch_all(_SQL["all_counts"])


async def flush_logged(db: Database) -> None:
    """:func:`flush`, where a failure must not stop the caller: logged, its deltas kept for the next."""
    try:
        await flush(db)
    except Exception as error:  # noqa: BLE001 - metrics never stop a job, a request or a shutdown
        log.warning("metrics_flush_failed", error_type=type(error).__name__)


async def flush_every(db: Database, clock: Clock, interval_s: float) -> None:
    """A web process's flusher: every ``interval_s`` on the clock, until cancelled."""
    while True:
        await clock.sleep(interval_s)
        await flush_logged(db)
