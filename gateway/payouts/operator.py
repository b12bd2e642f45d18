"""What an operator reads about payouts and recalls, across every tenant (issue 15 item 5; SQL in
``operator.sql``): the Draft payouts whose latest decision waits for a person, the payouts in one
state (the Unknown ones above all) with their latest attempt, the recall attempts in one state, and
one payout with everything ``GET /v1/payouts/{id}`` shows plus its append-only history. Read-only;
never a destination's provider token (DESIGN invariant 8)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from gateway.payouts import records, views
from gateway.store.db import Database, fetch_all
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.payouts", "operator.sql")
_PAYOUTS = load_queries("gateway.payouts", "payouts.sql")

PayoutState = Literal["Draft", "Approved", "Executing", "Unknown", "Paid", "Failed", "Cancelled"]
AttemptState = Literal["Claimed", "Started", "Unknown", "Succeeded", "Failed", "NotStarted", "NotApplied"]
Row = dict[str, Any]


async def payouts_in_state(db: Database, state: PayoutState, *, limit: int, after: str | None,
                           awaiting: bool = False) -> list[Row]:
    """Payouts in ``state``, oldest first, each with its latest attempt's and latest decision's
    columns (or NULLs); with ``awaiting``, only those whose latest decision waits for a person."""
    return await db.fetch_all(_SQL["payouts"], {"state": state, "awaiting": awaiting, "limit": limit, "after": after})


async def recalls_in_state(db: Database, state: AttemptState, *, limit: int, after: uuid.UUID | None) -> list[Row]:
    """Recall attempts in ``state``, oldest claim first."""
    return await db.fetch_all(_SQL["recalls_in_state"], {"state": state, "limit": limit, "after": after})


async def payout_with_history(db: Database, payout_id: str) -> tuple[Row, list[Row]]:
    """The payout as clerks see it plus its tenant and latest decision's wait, and its history, from
    one snapshot; 404 ``payout.not_found`` for an id that names none."""
    async with db.transaction() as conn:
        await conn.execute(_SQL["snapshot"])
        row = await records.get_payout(conn, payout_id, None)
        view = await views.payout_view(conn, row) | {"created_at": row["created_at"], "updated_at": row["updated_at"]}
        return view, await fetch_all(conn, _PAYOUTS["history_of_payout"], {"payout_id": payout_id})
