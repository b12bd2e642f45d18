"""The operator's Overview read model (``GET /v1/ops/overview``): one REPEATABLE READ
snapshot, a few cheap statements (``overview.sql``, and ``gauges.sql``'s per-kind Unknown, outbox
and escalation blocks, the ones /metrics reads), shaped by :mod:`gateway.domain.overview`. The clock's now is a
parameter like everywhere."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.domain import overview
from gateway.domain.timestamps import rfc3339
from gateway.settings import Settings
from gateway.store.db import Connection, Database, fetch_all
from gateway.store.gauges import OPEN_ESCALATIONS, UNKNOWN_OLDEST
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.store", "overview.sql")
_GAUGES = load_queries("gateway.store", "gauges.sql")
_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


def _age(now: datetime, since: datetime | None) -> float | None:
    return None if since is None else max(0.0, (now - since).total_seconds())


async def lookup_levels(conn: Connection, settings: Settings, now: datetime) -> dict[str, dict[str, Any]]:
    """Each configured account's lookup tokens now and its pause (``paused_until``, ``pause_reason``;
    None when not paused), by account id: what the Overview and /metrics show."""
    accounts = settings.provider_accounts
    limits = [settings.lookup_limit(account) for account in accounts]
    rows = await fetch_all(conn, _SQL["lookup_levels"], {
        "now": now, "scopes": [a.id for a in accounts], "rates": [rate for rate, _ in limits],
        "bursts": [burst for _, burst in limits]})
    return {row["scope"]: row for row in rows}


Rows = list[dict[str, Any]]


async def gauges(db: Database, settings: Settings, now: datetime) -> tuple[dict[str, dict[str, Any]], Rows]:
    """What /metrics shows of the Overview beyond its own gauges, for the Grafana dashboard's same
    panels: each account's lookup level and pause, and the payouts per state."""
    async with db.connection() as conn:
        return await lookup_levels(conn, settings, now), await fetch_all(conn, _SQL["payouts_by_state"], {})


async def read(db: Database, settings: Settings, now: datetime) -> dict[str, Any]:
    """The whole Overview as of ``now`` (its shape: ``Overview`` in the served OpenAPI document)."""
    since, _ = overview.window(now)
    accounts = settings.provider_accounts
    limits = [settings.lookup_limit(account) for account in accounts]
    async with db.transaction() as conn:
        await conn.execute(_SNAPSHOT)
        per_minute = await fetch_all(conn, _SQL["attempts_per_minute"], {"since": since, "now": now})
        unknown = await fetch_all(conn, UNKNOWN_OLDEST, {})
        payouts = await fetch_all(conn, _SQL["payouts_by_state"], {})
        levels = await lookup_levels(conn, settings, now)
        calls = overview.account_calls(await fetch_all(conn, _SQL["account_calls"], {}))
        outbox = await fetch_all(conn, _GAUGES["outbox_kinds"], {"now": now})
        escalations = await fetch_all(conn, OPEN_ESCALATIONS, {"now": now})
    slots = overview.minutes(per_minute, now)
    pending = [row for row in outbox if row["pending"]]
    no_calls = {"calls": 0, "errors": 0, "error_rate": None, "p50_s": None, "p99_s": None}
    return {
        "as_of": rfc3339(now),
        "window_minutes": overview.WINDOW_MINUTES,
        "attempts_per_minute": [{**slot, "minute": rfc3339(slot["minute"])} for slot in slots],
        "attempts_last_hour": {name: sum(slot[name] for slot in slots) for name in ("started", *overview.OUTCOMES)},
        "unknown_attempts": [{"kind": row["kind"], "unknown": row["unknown"], "oldest_since": rfc3339(row["oldest"]),
                              "oldest_age_s": _age(now, row["oldest"])} for row in unknown],
        "escalations": overview.escalations_by_reason(escalations),
        "outbox": {
            "pending": int(sum(row["pending"] for row in outbox)),
            "oldest_pending_age_s": max((row["lag"] for row in pending), default=None),
            "dead_letters": int(sum(row["dead"] for row in outbox)),
            "by_kind": sorted(({"kind": row["kind"], "pending": int(row["pending"]), "dead_letters": int(row["dead"])}
                               for row in _summed(outbox)), key=lambda row: row["kind"]),
        },
        "providers": [{"account": account.id, **calls.get(account.id, no_calls),
                       "lookup_tokens": levels[account.id]["tokens"], "lookup_burst": burst,
                       "paused_until": rfc3339(levels[account.id]["paused_until"]),
                       "pause_reason": levels[account.id]["pause_reason"]}
                      for account, (_, burst) in zip(accounts, limits, strict=True)],
        "payouts_by_state": {row["state"]: row["payouts"] for row in payouts},
    }


def _summed(outbox: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """outbox_kinds gives a kind's pending and dead rows apart: one row per kind."""
    kinds: dict[str, dict[str, Any]] = {}
    for row in outbox:
        found = kinds.setdefault(row["kind"], {"kind": row["kind"], "pending": 0.0, "dead": 0.0})
        found["pending"] += row["pending"]
        found["dead"] += row["dead"]
    return list(kinds.values())
