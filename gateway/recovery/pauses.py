"""Rate-limit pauses shared by every recovery worker (seed 004: "pause the sweep" — a 429 stops
new lookups in its scope, the provider account, until its Retry-After or a backoff has passed;
other accounts continue)."""

from __future__ import annotations

from datetime import timedelta

from gateway.clock import Clock
from gateway.store.db import Database
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.recovery")


async def pause_scope(db: Database, clock: Clock, scope: str, seconds: float, reason: str) -> None:
    async with db.transaction() as conn:
        await conn.execute(_SQL["pause_scope"], {"scope": scope, "reason": reason,
                                                 "paused_until": clock.now() + timedelta(seconds=seconds)})
