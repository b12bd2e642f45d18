"""Raising and closing escalation episodes inside the caller's transaction (seed 004, "Escalations").

Raising inserts the episode with ``ON CONFLICT (escalation_key) WHERE resolved_at IS NULL DO
NOTHING`` and, only if that added a row, an operator-alert outbox row keyed by the episode
(``escalation:<id>:initial``), never by the reusable reason key: a condition that recurs after
resolution opens a new episode whose alert is not swallowed by the first one's outbox key.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from gateway.outbox.store import OPERATOR_ALERT, enqueue
from gateway.store.db import Connection, fetch_all, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.escalations")


def alert_key(escalation_id: int, reminder: int | None = None) -> str:
    """The outbox key of an episode's initial alert or of its n-th reminder."""
    if reminder is None:
        return f"escalation:{escalation_id}:initial"
    return f"escalation:{escalation_id}:reminder:{reminder}"


async def raise_escalation(
    conn: Connection,
    *,
    escalation_key: str,
    reason: str,
    now: datetime,
    reminder_interval_s: float,
    attempt_id: UUID | None = None,
    details: dict[str, Any] | None = None,
) -> int | None:
    """Open an episode and queue its alert; the new escalation id, or None if one is already open."""
    facts = {key: value for key, value in (details or {}).items() if value is not None}
    if attempt_id is not None:
        facts.setdefault("attempt_id", str(attempt_id))
    row = await fetch_one(conn, _SQL["raise"], {
        "escalation_key": escalation_key,
        "attempt_id": attempt_id,
        "reason": reason,
        "details": Jsonb(facts),
        "now": now,
        "next_reminder_at": now + timedelta(seconds=reminder_interval_s),
    })
    if row is None:
        return None
    escalation_id = int(row["escalation_id"])
    await queue_alert(conn, escalation_id=escalation_id, escalation_key=escalation_key, reason=reason,
                      attempt_id=attempt_id, details=facts, now=now)
    return escalation_id


async def queue_alert(
    conn: Connection,
    *,
    escalation_id: int,
    escalation_key: str,
    reason: str,
    attempt_id: UUID | None,
    details: dict[str, Any],
    now: datetime,
    reminder: int | None = None,
) -> int | None:
    """Queue an episode's initial alert or its n-th reminder (no ordering key: alerts never wait).
    The payload carries both the episode id and the reason key."""
    return await enqueue(conn, dedup_key=alert_key(escalation_id, reminder), kind=OPERATOR_ALERT, now=now,
                         attempt_id=attempt_id,
                         payload={"escalation_id": escalation_id, "escalation_key": escalation_key,
                                  "reason": reason, "attempt_id": str(attempt_id) if attempt_id else None,
                                  "details": details, "alert": "initial" if reminder is None else "reminder",
                                  "reminder": reminder})


async def resolve_for_attempt(conn: Connection, attempt_id: UUID, now: datetime, note: str) -> None:
    """Close every open episode of ``attempt_id`` (call in the transaction that resolved it).
    It reads nothing back, so it can run inside a psycopg pipeline with the resolution's writes."""
    await conn.execute(_SQL["resolve_for_attempt"], {"attempt_id": attempt_id, "now": now, "note": note})


async def resolve_by_key(conn: Connection, escalation_key: str, now: datetime, note: str) -> list[int]:
    """Close the open episode of ``escalation_key``, if any, in the caller's transaction."""
    rows = await fetch_all(conn, _SQL["resolve_open"], {"escalation_id": None, "escalation_key": escalation_key,
                                                        "now": now, "note": note})
    return [int(row["escalation_id"]) for row in rows]


async def resolve_by_key_prefix(conn: Connection, prefix: str, now: datetime, note: str) -> list[int]:
    """Close every open episode whose key starts with ``prefix`` (a payout attempt's
    ``payout-attempt:<id>:``), in the caller's transaction: the payout form of
    :func:`resolve_for_attempt`, whose ``attempt_id`` column names checkout attempts only."""
    rows = await fetch_all(conn, _SQL["resolve_by_key_prefix"], {"prefix": prefix, "now": now, "note": note})
    return [int(row["escalation_id"]) for row in rows]


async def resolve_by_key_prefix_of_payout(conn: Connection, prefix: str, payout_id: str, now: datetime,
                                          note: str) -> list[int]:
    """Close every open episode under ``prefix`` whose details name ``payout_id`` (an expired
    grant's episodes, once the payout has its answer), in the caller's transaction."""
    rows = await fetch_all(conn, _SQL["resolve_by_key_prefix_of_payout"], {
        "prefix": prefix, "payout_id": payout_id, "now": now, "note": note})
    return [int(row["escalation_id"]) for row in rows]
