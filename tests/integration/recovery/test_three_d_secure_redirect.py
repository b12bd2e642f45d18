"""3-D Secure's redirect flow on a Stripe account, end to end through the real fake's Stripe
dialect (docs/decisions/0078): an order's ``return_url`` (https, or http on loopback) is part of
the attempt's stored request body, sent with ``confirm=true`` and without
``automatic_payment_methods[allow_redirects]=never``, so a card that needs authentication answers
``next_action.type`` ``redirect_to_url`` with its ``url`` where CardCo puts it; the customer
completes the challenge on the fake and a lookup brings the order to Paid. Seed 004, "The
Checkout Endpoint": the customer action is shown while current; every send carries the stored bytes.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import parse_qsl

import pytest

from gateway.clock import ManualClock
from gateway.settings import Settings
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT, account_config, settings_with
from tests.integration.checkout.conftest import Shop
from tests.integration.conftest import CARDCO_ONLY
from tests.integration.recovery.conftest import CARDCO_URL, STRIPE_KEY, STRIPE_SECRET, WorkerFactory
from tests.stripe_support import stripe_account

RETURN = "https://shop.test/orders/ORD-5521/return"


async def _order(shop: Shop, **fields: Any) -> Any:
    return await shop.http.post("/v1/orders", headers=shop.merchant, json={
        "order_id": "ORD-5521", "customer_id": shop.customer_id, "amount_minor": 4250, "currency": "EUR",
        "payment_method": shop.method("pm_card_3ds"), "provider_account": shop.account, **fields})


async def _challenged_then_paid(shop: Shop, worker: WorkerFactory, clock: ManualClock) -> dict[str, Any]:
    """Pay; the challenge is a redirect with a top-level ``url``; the customer completes it on the
    fake; one lookup later the order is Paid. Returns the challenge status."""
    paying = await shop.pay()
    assert paying.status_code == 200, paying.text
    challenged: dict[str, Any] = paying.json()
    assert (challenged["state"], challenged["provider_status"]) == ("Started", "requires_action")
    action = challenged["next_action"]
    assert action["type"] == "redirect_to_url" and action["url"].endswith(
        f"/_control/payments/{challenged['provider_payment_id']}/authenticate")
    await shop.authenticate(challenged["provider_payment_id"])
    clock.advance(3600)
    assert (await worker("recovery-1").sweep()).outcomes == {"found:succeeded->Succeeded": 1}
    order = await shop.http.get("/v1/orders/ORD-5521", headers=shop.customer)
    assert order.json()["state"] == "Paid"
    assert len(shop.ledger()) == 1
    return challenged


STRIPE_ONLY = pytest.mark.parametrize("provider", ["stripe"])


@STRIPE_ONLY
async def test_a_stripe_order_with_a_return_url_is_challenged_by_redirect_and_paid(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    created = await _order(shop, return_url=RETURN)
    assert created.status_code == 201 and created.json()["return_url"] == RETURN
    challenged = await _challenged_then_paid(shop, worker, clock)
    assert challenged["next_action"]["redirect_to_url"]["return_url"] == RETURN
    [attempt] = await shop.attempts()
    [sent] = shop.provider_requests()
    params = dict(parse_qsl(attempt["request_body"]))
    assert params["return_url"] == RETURN and params["confirm"] == "true"
    assert "automatic_payment_methods[allow_redirects]" not in params
    assert base64.b64decode(sent["body_base64"]).decode() == attempt["request_body"]  # the stored bytes, return URL included


@STRIPE_ONLY
async def test_a_stripe_order_without_a_return_url_keeps_the_stripe_js_challenge(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """No return URL anywhere: redirects stay disallowed (Stripe refuses a confirm that could
    redirect without one), so the challenge is Stripe.js's ``use_stripe_sdk``."""
    assert (await _order(shop)).status_code == 201
    status = (await shop.pay()).json()
    assert status["next_action"]["type"] == "use_stripe_sdk"
    [attempt] = await shop.attempts()
    assert dict(parse_qsl(attempt["request_body"]))["automatic_payment_methods[allow_redirects]"] == "never"


@CARDCO_ONLY
async def test_a_cardco_order_with_a_return_url_pays_through_the_same_redirect(
        shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
    """CardCo's challenge is always a redirect; its request body does not change with a return URL."""
    created = await _order(shop, return_url="http://127.0.0.1:8080/return")
    assert created.status_code == 201
    await _challenged_then_paid(shop, worker, clock)
    [attempt] = await shop.attempts()
    assert "return_url" not in attempt["request_body"]


@STRIPE_ONLY
@pytest.mark.parametrize(("url", "problem"), [
    ("http://shop.test/return", "must be https (http only on a loopback host)"),
    ("javascript:alert(1)", "not an absolute URL with a host"),
    ("/return", "not an absolute URL with a host"),
    ("https://user:pw@shop.test/return", "carries credentials"),
    ("https://shop.test/re turn", "contains whitespace or control characters"),
])
async def test_a_return_url_that_is_not_https_or_loopback_http_is_refused(
        shop: Shop, url: str, problem: str) -> None:
    refused = await _order(shop, return_url=url)
    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert body["code"] == "order.return_url_refused"
    assert body["errors"] == [{"field": "return_url", "message": problem}]
    assert await shop.services.db.fetch_all("SELECT 1 FROM orders") == []


@STRIPE_ONLY
@pytest.mark.parametrize("url", ["http://localhost:3000/return", "http://[::1]/r", "http://127.0.0.2/r"])
async def test_loopback_http_return_urls_are_accepted(shop: Shop, url: str) -> None:
    assert (await _order(shop, return_url=url)).status_code == 201


class TestTheAccountsDefault:
    """An account's ``return_url`` is used when the order names none."""

    @pytest.fixture
    def settings(self, database_url: str, redis_url: str) -> Settings:
        stripe = stripe_account(base_url=CARDCO_URL + "/stripe", api_key=STRIPE_KEY, secret=STRIPE_SECRET)
        return settings_with(database_url, redis_url, [
            account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT), stripe | {"return_url": RETURN}])

    @STRIPE_ONLY
    async def test_the_accounts_return_url_is_sent_when_the_order_has_none(
            self, shop: Shop, worker: WorkerFactory, clock: ManualClock) -> None:
        created = await _order(shop)
        assert created.json()["return_url"] is None
        await _challenged_then_paid(shop, worker, clock)
        [attempt] = await shop.attempts()
        assert dict(parse_qsl(attempt["request_body"]))["return_url"] == RETURN


def test_an_account_return_url_over_plain_http_is_refused_at_startup() -> None:
    from pydantic import ValidationError

    from gateway.settings import ProviderAccount

    fields = stripe_account() | {"return_url": "http://shop.test/return"}
    with pytest.raises(ValidationError, match="must be https"):
        ProviderAccount.model_validate(fields)
