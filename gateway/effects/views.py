"""What the APIs show of effect records (API.md, "Shapes": ``"effect": {"effect_digest" (hex),
"idempotency_key", "protocol_state"}``), for payouts per attempt and for the latest attempt, and as
an extension on checkout's PaymentStatus."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from gateway.store.db import Connection, fetch_all
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.effects")


async def effects_of(conn: Connection, attempt_ids: Iterable[uuid.UUID]) -> dict[str, dict[str, Any]]:
    """The effect of each attempt that has one, keyed by the attempt id as a string."""
    rows = await fetch_all(conn, _SQL["effects_of"], {"attempt_ids": list(attempt_ids)})
    return {str(row["attempt_id"]): effect_view(row) for row in rows}


def effect_view(row: dict[str, Any]) -> dict[str, Any]:
    """One effect as the APIs show it, from a row with its ``effect_digest``, ``idempotency_key``
    and ``protocol_state`` (queries.sql ``effects_of``)."""
    return {"effect_digest": bytes(row["effect_digest"]).hex(), "idempotency_key": row["idempotency_key"],
            "protocol_state": row["protocol_state"]}
