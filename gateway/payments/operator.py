"""What an operator reads about payment attempts (API.md "Operations"; "Precise details" → Shapes).

``list_attempts`` pages the attempts in one state, or in all, by creation (``GET /v1/ops/attempts``:
the Unknown ones are the backlog a person may have to chase; all of them, newest first, is what
just happened). ``attempt_history`` is one attempt with
its full event history, oldest first (``GET /v1/ops/attempts/{attempt_id}``), 404
``attempt.not_found`` for an id that names none. Neither returns the stored request body (it holds
the payment-method token) nor the lease token; events carry only identifiers, statuses and
reasons (DESIGN invariant 8), so no secret or card data can appear.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from gateway.domain.errors import AttemptNotFound
from gateway.domain.paging import Keyset, PageRequest
from gateway.store.db import Database, fetch_all, fetch_one
from gateway.store.keyset import FIRST_ROW, directed, page_params
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payments", "operator.sql")
_ATTEMPTS = directed(_SQL["attempts"])

# The API's spelling of the gateway.domain.outcomes.AttemptState values a checkout attempt takes
# (never Claimed): the state filter of GET /v1/ops/attempts (API.md, "Operations").
StateFilter = Literal["NotStarted", "Started", "Unknown", "Succeeded", "Failed", "NotApplied"]
Row = dict[str, Any]
KEYSET = Keyset("attempts", "created_at", "attempt_id", uuid.UUID)


async def list_attempts(db: Database, state: StateFilter | None, page: PageRequest, *,
                        after: uuid.UUID | None) -> list[Row]:
    """A page of the attempts in ``state`` (every state with None) by :data:`KEYSET`, beyond the
    attempt ``after`` (the last of a previous page) when given."""
    return await db.fetch_all(_ATTEMPTS[page.order], {"attempt_id": None, "state": state, "after": after,
                                                      **page_params(page)})


async def attempt_history(db: Database, attempt_id: uuid.UUID) -> tuple[Row, list[Row]]:
    """The attempt and its events from one snapshot, so the history ends where the row stands."""
    async with db.transaction() as conn:
        await conn.execute(_SQL["snapshot"])
        attempt = await fetch_one(conn, _ATTEMPTS["asc"], {"attempt_id": attempt_id, "state": None, "after": None,
                                                            **FIRST_ROW})
        if attempt is None:
            raise AttemptNotFound(f"no attempt {attempt_id}")
        return attempt, await fetch_all(conn, _SQL["attempt_events"], {"attempt_id": attempt_id})
