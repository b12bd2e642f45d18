"""The gauges ``/metrics`` reads from the database (``gauges.sql``): the fleet-wide truth, one
statement and one round trip per scrape; the clock's now is a parameter like everywhere."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.store.db import Database
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.store", "gauges.sql")


async def database_gauges(db: Database, now: datetime) -> list[dict[str, Any]]:
    """``(name, labels, value)`` rows, labels already in exposition form."""
    return await db.fetch_all(_SQL["database_gauges"], {"now": now})
