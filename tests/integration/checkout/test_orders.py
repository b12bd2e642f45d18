"""The orders API (API.md, "Orders and checkout"): idempotent create, conflicts, validation with
nothing written, reads that never reveal other customers' orders, cancellation through the lock."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TEST_ACCOUNT
from tests.integration.checkout.conftest import Shop

ORDER = {"order_id": "ORD-1", "customer_id": "cus_1", "amount_minor": 4250, "currency": "EUR",
         "payment_method": "pm_card_visa", "provider_account": TEST_ACCOUNT}


async def count_orders(shop: Shop) -> int:
    row = await shop.services.db.fetch_one("SELECT count(*) AS n FROM orders")
    return int(row["n"]) if row else 0


async def test_create_is_idempotent_for_the_same_body_and_409_for_another(shop: Shop) -> None:
    created = await shop.http.post("/v1/orders", headers=shop.merchant, json=ORDER)
    assert created.status_code == 201
    assert created.json()["state"] == "Open" and created.json()["amount_minor"] == 4250
    again = await shop.http.post("/v1/orders", headers=shop.merchant, json=ORDER)
    assert again.status_code == 200 and again.json() == created.json()
    conflict = await shop.http.post("/v1/orders", headers=shop.merchant, json={**ORDER, "amount_minor": 4251})
    assert (conflict.status_code, conflict.json()["code"]) == (409, "order.conflict")
    assert await count_orders(shop) == 1


@pytest.mark.parametrize("change, field", [
    ({"provider_account": "cardco:acct_store:staging"}, "provider_account"),
    ({"amount_minor": 0}, "amount_minor"),
    ({"amount_minor": "4250"}, "amount_minor"),
    ({"currency": "eur"}, "currency"),
    ({"payment_method": "4242424242424242"}, "payment_method"),
    ({"order_id": "bad id"}, "order_id"),
    ({"surprise": 1}, "surprise"),
])
async def test_invalid_orders_are_422_with_field_errors_and_nothing_is_written(
        shop: Shop, change: dict[str, Any], field: str) -> None:
    response = await shop.http.post("/v1/orders", headers=shop.merchant, json={**ORDER, **change})
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "request.invalid"
    assert field in [error["field"] for error in response.json()["errors"]]
    assert await count_orders(shop) == 0


async def test_malformed_json_is_422(shop: Shop) -> None:
    response = await shop.http.post("/v1/orders", headers={**shop.merchant, "Content-Type": "application/json"},
                                    content=b'{"order_id": ')
    assert (response.status_code, response.json()["code"]) == (422, "request.invalid")


async def test_only_merchants_create_and_only_owners_read(shop: Shop) -> None:
    refused = await shop.http.post("/v1/orders", headers=shop.customer, json=ORDER)
    assert refused.status_code == 404
    assert (await shop.http.post("/v1/orders", json=ORDER)).json()["code"] == "auth.missing"
    await shop.order("ORD-1")
    assert (await shop.http.get("/v1/orders/ORD-1", headers=shop.merchant)).status_code == 200
    assert (await shop.http.get("/v1/orders/ORD-1", headers=shop.customer)).status_code == 200
    operator = await shop.services.tokens.create("operator", "op-1")
    hidden = await shop.http.get("/v1/orders/ORD-1", headers={"Authorization": f"Bearer {operator}"})
    assert (hidden.status_code, hidden.json()["code"]) == (404, "order.not_found")


async def test_cancel_with_a_live_attempt_is_requested_and_completes_when_it_fails(shop: Shop) -> None:
    """Seed 004, "Cancellation goes through the same lock": with a live attempt the cancellation is
    an intent on the order; it completes when that attempt ends unpaid."""
    await shop.order(payment_method="pm_card_declined")
    attempt = await shop.services.attempts.mark_started(
        await shop.services.attempts.get_or_create_live("ORD-5521", "cus_1"))
    assert attempt is not None
    requested = await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
    assert requested.json()["state"] == "CancelRequested"
    from gateway.domain.attempts import Evidence

    await shop.services.attempts.record_response(attempt["attempt_id"], Evidence(
        finding="failed", provider_account=TEST_ACCOUNT, reason="card_declined"), actor="endpoint")
    order = await shop.http.get("/v1/orders/ORD-5521", headers=shop.merchant)
    assert order.json()["state"] == "Cancelled"


async def test_a_paid_order_cannot_be_cancelled(shop: Shop) -> None:
    await shop.order()
    await shop.pay()
    refused = await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
    assert (refused.status_code, refused.json()["code"]) == (409, "order.paid")
