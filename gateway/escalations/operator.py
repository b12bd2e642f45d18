"""What an operator does with escalations (API.md "Operations"; seed 004, "Reminders").

Acknowledging is the operator's own transaction, conditional on the episode still being open: it
records that a person has seen it (the first time is kept) and restarts the reminder schedule at
``now + acknowledged_reminder_interval_s``. Resolving closes the episode with a note and clears
its reminders; it never changes an attempt. Both answer 404 ``escalation.not_found`` for an
unknown id and 409 ``escalation.resolved`` for a closed episode.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from gateway.clock import Clock
from gateway.domain.errors import EscalationNotFound, EscalationResolved
from gateway.domain.paging import Keyset, PageRequest
from gateway.settings import Settings
from gateway.store.db import Connection, Database, fetch_all, fetch_one
from gateway.store.keyset import FIRST_ROW, directed, page_params
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.escalations")
_LIST = directed(_SQL["list_escalations"])

EscalationState = Literal["open", "acknowledged", "resolved", "all"]
KEYSET = Keyset("escalations", "raised_at", "escalation_id", int)


async def list_escalations(db: Database, state: EscalationState, page: PageRequest, *,
                           after: int = 0) -> list[dict[str, Any]]:
    """A page of the episodes in ``state`` with ids greater than ``after``, by :data:`KEYSET`."""
    return await db.fetch_all(_LIST[page.order], {"state": state, "escalation_id": None, "after": after,
                                                  **page_params(page)})


async def _changed(conn: Connection, query: str, escalation_id: int, params: dict[str, Any]) -> dict[str, Any]:
    """Run a change conditional on the episode being open; the episode after it, or the reason not."""
    changed = await fetch_one(conn, _SQL[query], {"escalation_id": escalation_id, **params})
    if changed is None:
        if await fetch_one(conn, _SQL["find_state"], {"escalation_id": escalation_id}) is None:
            raise EscalationNotFound(f"no escalation {escalation_id}")
        raise EscalationResolved(f"escalation {escalation_id} is already resolved")
    rows = await fetch_all(conn, _LIST["asc"], {"state": "all", "escalation_id": escalation_id, "after": 0,
                                                **FIRST_ROW})
    return rows[0]


async def acknowledge(db: Database, clock: Clock, settings: Settings, escalation_id: int) -> dict[str, Any]:
    """Record that a person has seen the open episode and slow its reminders down."""
    now = clock.now()
    next_reminder_at = now + timedelta(seconds=settings.acknowledged_reminder_interval_s)
    async with db.transaction() as conn:
        return await _changed(conn, "acknowledge", escalation_id, {"now": now, "next_reminder_at": next_reminder_at})


async def resolve(db: Database, clock: Clock, escalation_id: int, *, note: str) -> dict[str, Any]:
    """Close the open episode with ``note``; its reminders stop. No attempt changes."""
    async with db.transaction() as conn:
        return await _changed(conn, "resolve_open", escalation_id, {"now": clock.now(), "note": note,
                                                                     "escalation_key": None})
