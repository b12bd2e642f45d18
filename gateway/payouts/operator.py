"""What an operator reads about payouts and recalls, across every tenant (SQL in
``operator.sql``): the Draft payouts whose latest decision waits for a person, the payouts in one
state (the Unknown ones above all) with their latest attempt, the recall attempts in one state, and
one payout with everything ``GET /v1/payouts/{id}`` shows plus its append-only history. Read-only;
never a destination's provider token (DESIGN invariant 8)."""

from __future__ import annotations

import re
import uuid
from typing import Any, Literal

from gateway.domain.paging import Keyset, PageRequest
from gateway.payouts import records, views
from gateway.store.db import Database, fetch_all
from gateway.store.keyset import directed, page_params
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "operator.sql")
_PAYOUTS = load_queries("gateway.payouts", "payouts.sql")
_LIST = directed(_SQL["payouts"])
_RECALLS = directed(_SQL["recalls_in_state"])
_PAYOUT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,99}")  # gateway.http.bodies.Identifier


def _payout_id(text: str) -> str:
    if not _PAYOUT_ID.fullmatch(text):
        raise ValueError("not a payout id")
    return text


# Lists by creation (payouts_by_state); the awaiting list has its own name, so no cursor crosses over.
PAYOUTS = Keyset("payouts", "created_at", "payout_id", _payout_id)
AWAITING = Keyset("payout-approvals", "created_at", "payout_id", _payout_id)
RECALLS = Keyset("recalls", "claimed_at", "attempt_id", uuid.UUID)

PayoutState = Literal["Draft", "Approved", "Executing", "Unknown", "Paid", "Failed", "Cancelled"]
# The API's spelling of every gateway.domain.outcomes.AttemptState value: a recall filter's states.
StateFilter = Literal["Claimed", "Started", "Unknown", "Succeeded", "Failed", "NotStarted", "NotApplied"]
Row = dict[str, Any]


async def payouts_in_state(db: Database, state: PayoutState, page: PageRequest, *,
                           awaiting: bool = False) -> list[Row]:
    """A page of the payouts in ``state`` by :data:`PAYOUTS`, each with its latest attempt's and
    latest decision's columns (or NULLs); with ``awaiting`` (:data:`AWAITING`), only those whose
    latest decision waits for a person."""
    return await db.fetch_all(_LIST[page.order], {"state": state, "awaiting": awaiting, **page_params(page)})


async def recalls_in_state(db: Database, state: StateFilter, page: PageRequest) -> list[Row]:
    """A page of the recall attempts in ``state`` by :data:`RECALLS`."""
    return await db.fetch_all(_RECALLS[page.order], {"state": state, **page_params(page)})


async def payout_with_history(db: Database, payout_id: str) -> tuple[Row, list[Row]]:
    """The payout as clerks see it plus its tenant and latest decision's wait, and its history, from
    one snapshot; 404 ``payout.not_found`` for an id that names none."""
    async with db.transaction() as conn:
        await conn.execute(_SQL["snapshot"])
        row = await records.get_payout(conn, payout_id, None)
        view = await views.payout_view(conn, row) | {"created_at": row["created_at"], "updated_at": row["updated_at"]}
        return view, await fetch_all(conn, _PAYOUTS["history_of_payout"], {"payout_id": payout_id})
