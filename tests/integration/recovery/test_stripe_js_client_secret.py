"""Stripe.js's way through 3-D Secure (docs/decisions/0078): while the attempt's current action is
Stripe's ``use_stripe_sdk``, the owning customer's PaymentStatus (``POST /v1/orders/{id}/payment``
and ``GET .../payment/status``) carries the PaymentIntent's ``client_secret``, read live from
Stripe through the one provider-call client and kept nowhere; otherwise (a redirect challenge,
CardCo, no current action, a failed read) ``"client_secret": null``. The merchant's order and the
operator's attempt view never carry the key. Through the real fake's Stripe dialect, to Paid.
Seed 004, "The Checkout Endpoint": the customer action is shown only while current.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.clock import ManualClock
from tests.integration.checkout.conftest import Shop
from tests.integration.conftest import CARDCO_ONLY
from tests.integration.recovery.conftest import WorkerFactory

STRIPE_ONLY = pytest.mark.parametrize("provider", ["stripe"])


async def _order(shop: Shop, **fields: Any) -> None:
    created = await shop.http.post("/v1/orders", headers=shop.merchant, json={
        "order_id": "ORD-5521", "customer_id": shop.customer_id, "amount_minor": 4250, "currency": "EUR",
        "payment_method": shop.method("pm_card_3ds"), "provider_account": shop.account, **fields})
    assert created.status_code == 201, created.text


def _intents_secret(shop: Shop) -> str:
    [intent] = shop.cardco.store.payments.values()
    secret: str = intent.public()["client_secret"]
    return secret


@STRIPE_ONLY
async def test_the_owning_customer_gets_the_client_secret_while_the_stripe_js_action_is_current(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    await _order(shop)
    paying = await shop.pay()
    assert paying.status_code == 200, paying.text
    challenged = paying.json()
    assert challenged["next_action"]["type"] == "use_stripe_sdk"
    secret = _intents_secret(shop)
    assert challenged["client_secret"] == secret
    polled = await shop.status()
    assert (polled.status_code, polled.json()["client_secret"]) == (200, secret)
    again = await shop.pay()  # a second click reports the live attempt, secret included
    assert again.json()["client_secret"] == secret
    assert [r["path"] for r in shop.cardco.store.requests].count(
        f"/stripe/v1/payment_intents/{challenged['provider_payment_id']}") == 3  # read live, never kept

    operator = await shop.services.tokens.create("operator", "op-1")
    merchant_order = await shop.http.get("/v1/orders/ORD-5521", headers=shop.merchant)
    attempt_view = await shop.http.get(f"/v1/ops/attempts/{challenged['attempt_id']}",
                                       headers={"Authorization": f"Bearer {operator}"})
    assert "client_secret" not in merchant_order.json() and "client_secret" not in attempt_view.json()
    assert secret not in merchant_order.text + attempt_view.text

    wrong = await shop.authenticate(challenged["provider_payment_id"], client_secret=secret + "x")
    assert wrong.status_code == 400, wrong.text  # the fake's stand-in for Stripe.js checks the secret
    completed = await shop.authenticate(challenged["provider_payment_id"], client_secret=secret)
    assert completed.status_code == 200, completed.text
    clock.advance(3600)
    assert (await worker("recovery-1").sweep()).outcomes == {"found:succeeded->Succeeded": 1}
    assert (await shop.http.get("/v1/orders/ORD-5521", headers=shop.customer)).json()["state"] == "Paid"
    after = (await shop.status()).json()
    assert (after["state"], after["next_action"], after["client_secret"]) == ("Succeeded", None, None)


@STRIPE_ONLY
async def test_a_stripe_js_action_no_longer_current_shows_no_client_secret(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """The customer failed the challenge and a lookup ended the attempt: no action, no read."""
    await _order(shop)
    challenged = (await shop.pay()).json()
    secret = _intents_secret(shop)
    assert challenged["client_secret"] == secret
    failed = await shop.authenticate(challenged["provider_payment_id"], client_secret=secret, result="failed")
    assert failed.status_code == 200, failed.text
    clock.advance(3600)
    await worker("recovery-1").sweep()
    reads = len(shop.cardco.store.requests)
    ended = (await shop.status()).json()
    assert (ended["state"], ended["next_action"], ended["client_secret"]) == ("Failed", None, None)
    assert len(shop.cardco.store.requests) == reads


@STRIPE_ONLY
async def test_a_failed_live_read_gives_null_and_the_page_polls_on(shop: Shop) -> None:
    await _order(shop)
    challenged = (await shop.pay()).json()
    assert challenged["client_secret"] is not None
    await shop.faults({"operation": "get_payment", "action": "error_500_before_effect", "times": 0})
    polled = await shop.status()
    assert polled.status_code == 200, polled.text
    assert polled.json()["next_action"]["type"] == "use_stripe_sdk" and polled.json()["client_secret"] is None


@STRIPE_ONLY
async def test_a_redirect_challenge_carries_no_client_secret(shop: Shop) -> None:
    await _order(shop, return_url="https://shop.test/return")
    challenged = (await shop.pay()).json()
    assert challenged["next_action"]["type"] == "redirect_to_url" and challenged["client_secret"] is None


@CARDCO_ONLY
async def test_cardco_never_has_a_client_secret(shop: Shop) -> None:
    await _order(shop)
    challenged = (await shop.pay()).json()
    assert challenged["next_action"]["type"] == "redirect_to_url"
    assert "client_secret" in challenged and challenged["client_secret"] is None
