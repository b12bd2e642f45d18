"""What the APIs show of an attempt of any kind (API.md, Payouts and "Shapes"): the kind's
``attempt_fields``, identifiers as strings and times in RFC 3339 UTC, plus its seed 001 ``effect``
(``None`` for an attempt claimed before effect records existed)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from gateway.domain.timestamps import rfc3339
from gateway.effects.views import effects_of
from gateway.pipeline.kind import AttemptKind, Row
from gateway.store.db import Connection


def shown(row: Row, fields: Sequence[str]) -> dict[str, Any]:
    """``fields`` of ``row``, each as JSON shows it."""
    return {name: _json(row[name]) for name in fields}


def _json(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return rfc3339(value)
    return value


async def attempts_view(kind: AttemptKind, conn: Connection, rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Each attempt shown with its effect, in the order given (oldest first)."""
    effects = await effects_of(conn, [row["attempt_id"] for row in rows])
    return [shown(row, kind.attempt_fields) | {"effect": effects.get(str(row["attempt_id"]))} for row in rows]
