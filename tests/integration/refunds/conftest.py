"""Refunds over the checkout shop (issue 11 item 3): same database, CardCo and ManualClock."""

from __future__ import annotations

from typing import Any

from tests.integration.checkout.conftest import Shop, shop  # noqa: F401  (the checkout suite's Shop)


async def refund_rows(shop: Shop, table: str, order_id: str = "ORD-5521") -> list[dict[str, Any]]:  # noqa: F811
    """Rows of one refund table for the order, oldest first (``table`` is a fixed test literal)."""
    order_by = {"payment_refund_decisions": "position", "payment_refund_history": "event_id"}.get(
        table, "refund_number")
    return await shop.services.db.fetch_all(
        f"SELECT * FROM {table} WHERE order_id = %(o)s ORDER BY {order_by}", {"o": order_id})


async def order(shop: Shop, order_id: str = "ORD-5521") -> dict[str, Any]:  # noqa: F811
    response = await shop.http.get(f"/v1/orders/{order_id}", headers=shop.merchant)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body
