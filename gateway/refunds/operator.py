"""What an operator reads about refunds of paid orders (docs/decisions/0019; SQL
in ``operator.sql``): a page of refunds in one state, and one order's refunds (every decision,
grant and attempt with its seed 001 effect, as ``GET /v1/orders/{id}`` shows them) with the
order and the refunds' append-only history. Read-only; never a payment-method token."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from gateway.domain.errors import OrderNotFound
from gateway.domain.paging import Keyset, PageRequest
from gateway.refunds.decisions import SQL as REFUNDS
from gateway.refunds.views import refunds_of
from gateway.store.db import Database, fetch_all, fetch_one
from gateway.store.keyset import directed, page_params
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.refunds", "operator.sql")
_LIST = directed(_SQL["refunds"])
KEYSET = Keyset("refunds", "requested_at", "grant_id", uuid.UUID)

RefundState = Literal["all", "Requested", "Expired", "Claimed", "Started", "Unknown", "Succeeded", "Failed",
                      "NotStarted", "NotApplied"]
Row = dict[str, Any]


async def list_refunds(db: Database, state: RefundState, page: PageRequest) -> list[Row]:
    """A page of the refunds in ``state`` (or all) by :data:`KEYSET`: when they were decided."""
    return await db.fetch_all(_LIST[page.order], {"state": state, **page_params(page)})


async def refunds_with_history(db: Database, order_id: str) -> tuple[Row, dict[str, Any], list[Row]]:
    """The order, its refunds and their history from one snapshot; 404 ``order.not_found``."""
    async with db.transaction() as conn:
        await conn.execute(_SQL["snapshot"])
        order = await fetch_one(conn, _SQL["order_of_refunds"], {"order_id": order_id})
        if order is None:
            raise OrderNotFound()
        return order, await refunds_of(conn, order_id), await fetch_all(
            conn, REFUNDS["history_of_order"], {"order_id": order_id})
