"""Operator endpoints for refunds of paid orders (the console's "refunds of paid
orders, their attempts and states"; docs/decisions/0019: a refund is its own decision, grant and
attempts; seed 004 "Cancellation": the refund is its own operation)."""

from __future__ import annotations

from typing import Any

from gateway.clock import ManualClock
from gateway.services import Services
from tests.integration.refunds.conftest import Shop, refund_job, run_refund

LOST = {"operation": "refund_payment", "action": "drop_response"}


async def ops(shop: Shop, operator: dict[str, str], path: str, **params: Any) -> Any:
    response = await shop.http.get(path, headers=operator, params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_refunds_in_each_state_with_their_attempts_and_history(shop: Shop, services: Services,
                                                                      clock: ManualClock) -> None:
    """A requested refund is ``Requested`` until its attempt is claimed, then its attempt's state
    (Unknown when CardCo's answer was lost); the order's page shows every decision, grant, attempt
    and history event; nothing of the payment method."""
    operator = {"Authorization": f"Bearer {await services.tokens.create('operator', 'ops_1')}"}
    for order_id in ("ORD-R1", "ORD-R2"):
        await shop.order(order_id)
        assert (await shop.pay(order_id)).json()["state"] == "Succeeded"
        response = await shop.http.post(f"/v1/orders/{order_id}/refund", headers=shop.merchant, json={})
        assert response.json()["outcome"] == "Allowed", response.text
        clock.advance(1)
    await shop.faults(LOST)
    assert await run_refund(shop, await refund_job(shop)) == "Unknown"  # the latest: ORD-R2's

    first, second = await ops(shop, operator, "/v1/ops/refunds")
    assert (first["order_id"], first["state"], first["attempt_id"], first["cause"]) == (
        "ORD-R1", "Requested", None, "merchant-request")
    assert (second["order_id"], second["state"], second["client_reference"], second["order_state"]) == (
        "ORD-R2", "Unknown", "ORD-R2-r1", "Paid")
    assert await ops(shop, operator, "/v1/ops/refunds", state="Unknown") == [second]
    assert await ops(shop, operator, "/v1/ops/refunds", state="Succeeded") == []
    assert await ops(shop, operator, "/v1/ops/refunds", order="desc") == [second, first]

    detail = await ops(shop, operator, "/v1/ops/refunds/ORD-R2")
    assert (detail["order"]["order_id"], detail["refund"]["state"]) == ("ORD-R2", "Unknown")
    assert [a["state"] for a in detail["refunds"]["attempts"]] == ["Unknown"]
    assert [e["kind"] for e in detail["history"]][:2] == ["decision", "grant"]
    assert "pm_card" not in str(detail) and "payment_method" not in detail["order"]

    missing = await shop.http.get("/v1/ops/refunds/ORD-NONE", headers=operator)
    assert (missing.status_code, missing.json()["code"]) == (404, "order.not_found")
    denied = await shop.http.get("/v1/ops/refunds", headers=shop.merchant)
    assert (denied.status_code, denied.json()["code"]) == (403, "auth.forbidden")
