"""Seed 004's resend condition "the payment method is still usable", checked with CardCo,
and the matrix line "Two different failed resend conditions, such as an
expired token and a later order cancellation, open separate escalations". Real PostgreSQL, the
CardCo fake (its payment-method expiry through the control API) and one ManualClock."""

from __future__ import annotations

from typing import Any

import httpx

from gateway.clock import ManualClock
from provider_fake.app import create_app
from tests.integration.checkout.conftest import Shop
from tests.integration.recovery.conftest import WorkerFactory

FIRST_BACKOFF_S = 60
READONLY_CADENCE_S = 900


async def _lost_request(shop: Shop) -> dict[str, Any]:
    """A payment whose request never reached CardCo: Unknown, nothing at the provider."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "timeout_before_effect"})
    response = await shop.pay()
    assert response.json()["state"] == "Unknown", response.text
    await shop.faults()
    return dict(response.json())


async def _expire(shop: Shop, payment_method: str) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(shop.cardco)),
                                 base_url="http://cardco.test") as control:
        response = await control.post(f"/_control/payment_methods/{payment_method}/expire")
        assert response.status_code == 200 and response.json()["status"] == "expired", response.text


async def _escalations(shop: Shop) -> list[tuple[str, bool]]:
    rows = await shop.services.db.fetch_all(
        "SELECT escalation_key, resolved_at FROM payment_escalations ORDER BY escalation_id")
    return [(row["escalation_key"], row["resolved_at"] is None) for row in rows]


async def test_an_expired_token_and_a_later_cancellation_open_separate_escalations(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """Seed 004 matrix: "Two different failed resend conditions, such as an expired token and a
    later order cancellation, open separate escalations"; the token check is
    real (CardCo says the stored request's payment method expired), so nothing is resent."""
    attempt = await _lost_request(shop)
    await _expire(shop, "pm_card_visa")

    clock.advance(FIRST_BACKOFF_S)
    assert (await worker().sweep()).outcomes == {"escalated:resend-not-safe:token-expired": 1}
    assert await shop.http.post("/v1/orders/ORD-5521/cancel", headers=shop.merchant)
    clock.advance(READONLY_CADENCE_S)
    assert (await worker().sweep()).outcomes == {"escalated:resend-not-safe:order-not-payable": 1}

    prefix = f"attempt:{attempt['attempt_id']}:resend-not-safe"
    assert await _escalations(shop) == [(f"{prefix}:token-expired", True), (f"{prefix}:order-not-payable", True)]
    alerts = await shop.services.db.fetch_all(
        "SELECT payload FROM outbox_messages WHERE kind = 'operator-alert' ORDER BY message_id")
    assert [a["payload"]["reason"] for a in alerts] == ["resend-not-safe:token-expired",
                                                        "resend-not-safe:order-not-payable"]
    assert len(shop.provider_requests()) == 1 and shop.ledger() == []  # the first send only, never resent
    [row] = await shop.attempts()
    assert row["state"] == "Unknown"


async def test_a_payment_method_check_that_fails_is_asked_again_without_escalating(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """A failed check (CardCo 500) says nothing about the token: no resend, no
    escalation, the next backoff step asks again and then resends the stored request."""
    await _lost_request(shop)
    await shop.faults({"operation": "get_payment_method", "action": "error_500_before_effect"})
    clock.advance(FIRST_BACKOFF_S)
    assert (await worker().sweep()).outcomes == {"scheduled": 1}
    assert await _escalations(shop) == [] and len(shop.provider_requests()) == 1
    clock.advance(120)
    assert (await worker().sweep()).outcomes == {"resent:succeeded->Succeeded": 1}
    assert len(shop.ledger()) == 1
