"""What an operator does with the outbox (API.md "Operations"): list, retry, discard.

Policy (docs/decisions/0004-...): a dead-lettered business row keeps blocking later rows with its
ordering key until an operator either retries it (it becomes due now and starts over with a full
failure budget) or discards it (it counts as finished; its successors proceed). Either action
ends the condition the row's ``outbox:<id>:dead-lettered`` escalation reports, so it resolves that
episode in the same transaction. A backing-off row can be retried too; only a dead-lettered one
can be discarded.
"""

from __future__ import annotations

from typing import Any, Literal

from gateway.clock import Clock
from gateway.domain.errors import OutboxDiscarded, OutboxDispatched, OutboxMessageNotFound, OutboxNotDead
from gateway.domain.outbox_policy import dead_letter_escalation_key
from gateway.domain.paging import Keyset, PageRequest
from gateway.escalations.store import resolve_by_key
from gateway.store.db import Connection, Database, fetch_all, fetch_one
from gateway.store.keyset import FIRST_ROW, directed, page_params
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.outbox")
_LIST = directed(_SQL["list_messages"])

OutboxState = Literal["pending", "dead", "discarded", "dispatched"]
KEYSET = Keyset("outbox", "created_at", "message_id", int)


async def list_messages(db: Database, state: OutboxState, page: PageRequest, *,
                        after: int = 0) -> list[dict[str, Any]]:
    """A page of the rows in ``state`` with ids greater than ``after``, by :data:`KEYSET`."""
    return await db.fetch_all(_LIST[page.order], {"state": state, "message_id": None, "after": after,
                                                  **page_params(page)})


async def _message(conn: Connection, message_id: int) -> dict[str, Any]:
    rows = await fetch_all(conn, _LIST["asc"], {"state": None, "message_id": message_id, "after": 0,
                                                **FIRST_ROW})
    return rows[0]


async def _locked(conn: Connection, message_id: int) -> dict[str, Any]:
    row = await fetch_one(conn, _SQL["lock_message"], {"message_id": message_id})
    if row is None:
        raise OutboxMessageNotFound(f"no outbox message {message_id}")
    return row


async def retry(db: Database, clock: Clock, message_id: int, *, operator: str) -> dict[str, Any]:
    """Make a dead-lettered or backing-off row due now with a fresh failure budget."""
    async with db.transaction() as conn:
        row = await _locked(conn, message_id)
        if row["dispatched_at"] is not None:
            raise OutboxDispatched(f"outbox message {message_id} was dispatched; there is nothing to retry")
        if row["discarded_at"] is not None:
            raise OutboxDiscarded(f"outbox message {message_id} was discarded")
        now = clock.now()
        await conn.execute(_SQL["retry"], {"message_id": message_id, "now": now})
        await resolve_by_key(conn, dead_letter_escalation_key(message_id), now, f"retried by operator {operator}")
        return await _message(conn, message_id)


async def discard(db: Database, clock: Clock, message_id: int, *, operator: str, note: str) -> dict[str, Any]:
    """Drop a dead-lettered row for good, recording who and why; it stops blocking its successors."""
    async with db.transaction() as conn:
        row = await _locked(conn, message_id)
        if row["discarded_at"] is not None:
            raise OutboxDiscarded(f"outbox message {message_id} was already discarded")
        if row["dead_lettered_at"] is None:
            raise OutboxNotDead(f"outbox message {message_id} is not dead-lettered")
        now = clock.now()
        await conn.execute(_SQL["discard"], {"message_id": message_id, "now": now, "operator": operator,
                                             "note": note})
        await resolve_by_key(conn, dead_letter_escalation_key(message_id), now,
                             f"discarded by operator {operator}: {note}")
        return await _message(conn, message_id)
