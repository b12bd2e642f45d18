"""The orders aggregate: create (idempotent by order_id), read, cancel (API.md, Orders and checkout).

Cancelling goes through the order lock: with no live attempt the order is cancelled outright;
with one, the cancellation is recorded as ``CancelRequested`` and no new send intent can be
committed after it, because the Started transition and every recovery send intent re-check under
the same lock that the order is still ``Open`` (seed 004, "Cancellation goes through the same lock").
"""

from __future__ import annotations

from typing import Any

from gateway.clock import Clock
from gateway.domain.errors import OrderConflict, OrderNotFound, OrderPaid
from gateway.effects.certify import certificate_of
from gateway.store.db import Database, fetch_one
from gateway.store.queries import load_queries

_SQL = load_queries("gateway.orders")

TERMS = ("customer_id", "amount_minor", "currency", "payment_method", "return_url", "provider_account")

Order = dict[str, Any]


class Orders:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def create(self, merchant_id: str, terms: dict[str, Any]) -> tuple[Order, bool]:
        """The order and whether it was created now; the same id with other terms is a conflict."""
        terms = {"return_url": None, **terms}
        async with self._db.transaction() as conn:
            created = await fetch_one(conn, _SQL["insert"], {**terms, "merchant_id": merchant_id,
                                                              "now": self._clock.now()})
            if created is not None:
                return created, True
            existing = await fetch_one(conn, _SQL["get"], {"order_id": terms["order_id"]})
        if existing is None:  # deleted in between: orders are never deleted, so this is a bug
            raise RuntimeError(f"order {terms['order_id']} conflicted but cannot be read")
        if existing["merchant_id"] != merchant_id or any(existing[k] != terms[k] for k in TERMS):
            raise OrderConflict(f"order {terms['order_id']} exists with different terms")
        return existing, False

    async def get(self, order_id: str) -> Order:
        row = await self._db.fetch_one(_SQL["get"], {"order_id": order_id})
        if row is None:
            raise OrderNotFound()
        return row

    async def get_owned(self, order_id: str, role: str, subject: str) -> Order:
        """The order as its merchant or its customer reads it; 404 ``order.not_found`` for an
        unknown order and, alike, for anyone else's (the owner check is the query's WHERE)."""
        row = await self._db.fetch_one(_SQL["get_owned"], {"order_id": order_id, "role": role, "subject": subject})
        if row is None:
            raise OrderNotFound()
        return row

    async def certificate(self, order_id: str, role: str, subject: str) -> dict[str, Any] | None:
        """The certificate of the order's succeeded attempt's effect, None when there is none
        (seed 001; API.md "Shapes"); 404 ``order.not_found`` unless the caller owns the order in
        its role, as :meth:`get_owned`."""
        async with self._db.transaction() as conn:
            row = await fetch_one(conn, _SQL["certificate_attempt"],
                                  {"order_id": order_id, "role": role, "subject": subject})
            if row is None:
                raise OrderNotFound()
            return None if row["attempt_id"] is None else await certificate_of(conn, row["attempt_id"])

    async def cancel(self, order_id: str, merchant_id: str) -> Order:
        async with self._db.transaction() as conn:
            order = await fetch_one(conn, _SQL["lock"], {"order_id": order_id})
            if order is None or order["merchant_id"] != merchant_id:
                raise OrderNotFound()
            if order["state"] == "Paid":
                raise OrderPaid("a paid order is refunded, not cancelled")
            if order["state"] != "Open":
                return order
            live = await fetch_one(conn, _SQL["has_live_attempt"], {"order_id": order_id})
            state = "CancelRequested" if live and live["live"] else "Cancelled"
            updated = await fetch_one(conn, _SQL["set_state"], {"order_id": order_id, "state": state,
                                                                 "now": self._clock.now()})
        if updated is None:
            raise RuntimeError(f"order {order_id} vanished under its lock")
        return updated
