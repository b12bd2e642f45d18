"""Writing outbox rows (seed 004, "Downstream Work").

A row's ``dedup_key`` identifies the effect, not its trigger: ``attempt:<id>:order-confirmation``
is the same key whether the endpoint, a notification or a lookup resolved the attempt, so the
confirmation is queued once. Business effects carry ``ordering_key = 'attempt:<id>'`` and are
delivered in ``message_id`` order per key; operator alerts carry none and never wait. The payload
always carries the dedup key, so consumers can deduplicate a redelivered message too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from gateway.store.db import Connection
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.outbox")

OPERATOR_ALERT = "operator-alert"


def attempt_ordering_key(attempt_id: UUID) -> str:
    return f"attempt:{attempt_id}"


def effect_rows(effects: list[tuple[str, str]], payload: dict[str, Any]) -> Jsonb:
    """The outbox payloads of several (dedup key, kind) effects sharing one ``payload``, each as
    :func:`enqueue` stores it (naming its dedup key and kind), as one JSON array: a statement that
    queues them together (gateway/payments/queries.sql ``write_evidence``) takes one parameter."""
    return Jsonb([_payload(key, kind, payload) for key, kind in effects])


def _payload(dedup_key: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "dedup_key": dedup_key, "kind": kind}


def _row(dedup_key: str, kind: str, payload: dict[str, Any], now: datetime, attempt_id: UUID | None,
         ordering_key: str | None) -> dict[str, Any]:
    return {"dedup_key": dedup_key, "attempt_id": attempt_id, "ordering_key": ordering_key, "kind": kind,
            "payload": Jsonb(_payload(dedup_key, kind, payload)), "now": now}


async def enqueue(
    conn: Connection,
    *,
    dedup_key: str,
    kind: str,
    payload: dict[str, Any],
    now: datetime,
    attempt_id: UUID | None = None,
    ordering_key: str | None = None,
) -> int | None:
    """Queue one effect in the caller's transaction; the new message id, or None when the same
    effect was already queued (by this cause or another route)."""
    cursor = await conn.execute(_SQL["enqueue"], _row(dedup_key, kind, payload, now, attempt_id, ordering_key))
    row = await cursor.fetchone()
    return None if row is None else int(row["message_id"])
