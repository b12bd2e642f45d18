"""Checkout on a Stripe account, end to end through the real gateway app, PostgreSQL and the
recovery loop, with Stripe's API served through respx in the shapes its reference documents
(PaymentIntents with ``confirm=true``, form-encoded, the attempt's key as
``Idempotency-Key``, ``metadata[client_reference]``, ``Stripe-Version`` pinned per account;
errors, 429s with ``Retry-After``, idempotency replays; ``Stripe-Signature`` webhooks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl

import pytest
import respx

from gateway.clock import ManualClock
from gateway.recovery.loop import Recovery
from gateway.settings import Settings
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT, account_config, settings_with
from tests.integration.checkout.conftest import Shop
from tests.integration.refunds.conftest import refund_job, run_refund
from tests.stripe_support import (
    STRIPE_ACCOUNT,
    STRIPE_API_VERSION,
    STRIPE_URL,
    StripeApi,
    event,
    payment_intent,
    stripe_account,
    stripe_signature,
)

ENDPOINT = "stripe-test"


@pytest.fixture
def settings(database_url: str, redis_url: str) -> Settings:
    """The suite's two CardCo accounts, then a Stripe test account (listed after them)."""
    return settings_with(database_url, redis_url, [account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT),
                                                   stripe_account(endpoint=ENDPOINT)])


@pytest.fixture
def stripe_api(clock: ManualClock, cardco_http: respx.MockRouter) -> Iterator[StripeApi]:
    api = StripeApi(clock.now, visibility_s=120)  # longer than the first lookup backoff step (60 s)
    cardco_http.route(url__startswith=STRIPE_URL).mock(side_effect=api.handle)
    yield api


def recovery(shop: Shop) -> Recovery:
    services = shop.services
    return Recovery(services.settings, services.clock, services.db, services.attempts, services.payments,
                    owner="recovery-1")


async def pay(shop: Shop, payment_method: str = "pm_card_visa") -> dict[str, Any]:
    await shop.order(payment_method=payment_method, account=STRIPE_ACCOUNT)
    response = await shop.pay()
    assert response.status_code in (200, 202), response.text
    return response.json()  # type: ignore[no-any-return]


async def test_a_stripe_payment_is_a_confirmed_payment_intent_sent_as_the_stored_form_body(
        shop: Shop, stripe_api: StripeApi) -> None:
    status = await pay(shop)
    assert status["state"] == "Succeeded" and status["provider_payment_id"] == "pi_0001"
    assert status["provider_status"] == "succeeded"
    [attempt] = await shop.attempts()
    [sent] = stripe_api.creates()
    assert str(sent.url) == f"{STRIPE_URL}/v1/payment_intents" == attempt["endpoint"]
    assert sent.content.decode() == attempt["request_body"]  # byte for byte, form-encoded
    assert sent.headers["content-type"] == "application/x-www-form-urlencoded"
    assert sent.headers["idempotency-key"] == attempt["idempotency_key"]
    assert sent.headers["stripe-version"] == attempt["api_version"] == STRIPE_API_VERSION
    assert sent.headers["authorization"] == "Bearer sk_test_51Qstripe"
    params = dict(parse_qsl(sent.content.decode()))
    assert params["confirm"] == "true" and params["metadata[client_reference]"] == "ORD-5521-a1"
    assert params["amount"] == "4250" and params["currency"] == "eur" and params["payment_method"] == "pm_card_visa"
    order = await shop.http.get("/v1/orders/ORD-5521", headers=shop.customer)
    assert order.json()["state"] == "Paid"


async def test_a_402_decline_fails_the_attempt_with_the_decline_code(shop: Shop, stripe_api: StripeApi) -> None:
    status = await pay(shop, "pm_card_declined")
    assert (status["state"], status["outcome_reason"]) == ("Failed", "insufficient_funds")
    assert status["provider_payment_id"] == "pi_0001" and status["provider_status"] == "requires_payment_method"


async def test_requires_action_shows_stripes_next_action_to_the_customer(shop: Shop, stripe_api: StripeApi) -> None:
    status = await pay(shop, "pm_card_3ds")
    assert status["state"] == "Started" and status["provider_status"] == "requires_action"
    assert status["next_action"]["type"] == "use_stripe_sdk"


async def test_a_429_on_the_only_send_is_a_no_effect_rejection(shop: Shop, stripe_api: StripeApi) -> None:
    """Stripe's rate limiters run before its idempotency layer: nothing happened (decision 0047)."""
    stripe_api.script = ["429"]
    status = await pay(shop)
    assert (status["state"], status["outcome_reason"]) == ("NotApplied", "rate_limit")
    assert stripe_api.intents == {}


async def test_a_lost_answer_is_unknown_and_recovery_resends_under_the_key_inside_the_search_lag(
        shop: Shop, stripe_api: StripeApi, clock: ManualClock) -> None:
    """Seed 004: a lost response is Unknown; the search finds nothing yet (Stripe's search lags
    behind writes), which proves nothing: recovery resends the stored request under the attempt's
    key, and Stripe replays the saved answer. One PaymentIntent in total."""
    stripe_api.script = ["drop"]
    status = await pay(shop)
    assert status["state"] == "Unknown"
    clock.advance(61)  # past the attempt's first check, still inside the search lag
    report = await recovery(shop).sweep()
    assert report.outcomes == {"resent:succeeded->Succeeded": 1}
    first, second = stripe_api.creates()
    assert first.content == second.content and first.headers["idempotency-key"] == second.headers["idempotency-key"]
    searched = [r for r in stripe_api.requests if r.url.path == "/v1/payment_intents/search"]
    assert searched and searched[0].url.params["query"] == "metadata['client_reference']:'ORD-5521-a1'"
    assert len(stripe_api.intents) == 1
    assert (await shop.services.attempts.get(status["attempt_id"]))["provider_payment_id"] == "pi_0001"


async def test_once_searchable_the_lost_payment_is_found_without_a_resend(
        shop: Shop, stripe_api: StripeApi, clock: ManualClock) -> None:
    stripe_api.script = ["drop"]
    status = await pay(shop)
    clock.advance(121)
    assert (await recovery(shop).sweep()).outcomes == {"found:succeeded->Succeeded": 1}
    assert len(stripe_api.creates()) == 1 and status["state"] == "Unknown"


async def test_a_rate_limited_lookup_is_never_not_found_and_pauses_the_account(
        shop: Shop, stripe_api: StripeApi, clock: ManualClock) -> None:
    """Seed 004: a 429 from a lookup leaves the attempt Unknown, is not "not found", and pauses
    lookups for the account for its Retry-After."""
    stripe_api.script, stripe_api.lookups = ["lost"], ["429"]
    status = await pay(shop)
    clock.advance(61)
    assert (await recovery(shop).sweep()).outcomes == {"scheduled": 1}
    assert len(stripe_api.creates()) == 1  # nothing resent on a failed lookup
    attempt = await shop.services.attempts.get(status["attempt_id"])
    assert attempt["state"] == "Unknown"
    pauses = await shop.services.db.fetch_all("SELECT * FROM provider_pauses")
    assert [p["scope"] for p in pauses] == [STRIPE_ACCOUNT]


async def test_a_key_reused_with_other_parameters_is_unknown_and_escalated(
        shop: Shop, stripe_api: StripeApi) -> None:
    """Stripe's 400 ``idempotency_error``: our key already carries other parameters (decision 0009)."""
    await shop.order(account=STRIPE_ACCOUNT)
    stripe_api.saved = _EveryKeyReused()  # as if another request had used the key first
    status = (await shop.pay()).json()
    assert (status["state"], status["outcome_reason"]) == ("Unknown", "provider.idempotency-key-in-use")
    rows = await shop.services.db.fetch_all("SELECT reason FROM payment_escalations")
    assert [r["reason"] for r in rows] == ["idempotency-key-in-use"]


class _EveryKeyReused(dict[str, tuple[dict[str, str], int, dict[str, Any]]]):
    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> tuple[dict[str, str], int, dict[str, Any]]:
        return {"amount": "1"}, 200, payment_intent()


async def test_a_signed_stripe_webhook_resolves_the_attempt_once(
        shop: Shop, stripe_api: StripeApi, clock: ManualClock) -> None:
    """Webhooks posted to ``/v1/webhooks/{webhook_endpoint_id}`` with ``Stripe-Signature``,
    deduplicated by event id, applied through the same rule every writer uses."""
    stripe_api.script = ["lost"]
    status = await pay(shop)
    body = event("payment_intent.succeeded", payment_intent(id="pi_late", client_reference="ORD-5521-a1"))
    signed = {"Stripe-Signature": stripe_signature(body, int(clock.now().timestamp()))}
    for _ in range(2):
        response = await shop.http.post(f"/v1/webhooks/{ENDPOINT}", content=body, headers=signed)
        assert response.status_code == 204
    attempt = await shop.services.attempts.get(status["attempt_id"])
    assert (attempt["state"], attempt["provider_payment_id"]) == ("Succeeded", "pi_late")
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]
    events = await shop.services.db.fetch_all(
        "SELECT provider_account, notification_key FROM payment_attempt_events WHERE kind = 'notification'")
    assert [(e["provider_account"], e["notification_key"]) for e in events] == [(STRIPE_ACCOUNT, "evt_1Q0abc")]
    forged = {"Stripe-Signature": stripe_signature(body, int(clock.now().timestamp()), "whsec_someone_else")}
    rejected = await shop.http.post(f"/v1/webhooks/{ENDPOINT}", content=body, headers=forged)
    assert rejected.status_code == 401 and rejected.json()["code"] == "webhook.signature_invalid"


async def test_a_merchant_refund_of_a_stripe_payment_goes_through_stripes_refunds_api(
        shop: Shop, stripe_api: StripeApi) -> None:
    """Refunds through Stripe's refunds API (``POST /v1/refunds`` for the PaymentIntent,
    in full, with the refund's own reference and key), on the paid attempt's account."""
    await pay(shop)
    decided = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert decided.status_code == 200, decided.text
    assert await run_refund(shop, await refund_job(shop)) == "Succeeded"
    [_, sent] = stripe_api.creates()
    assert str(sent.url) == f"{STRIPE_URL}/v1/refunds" and sent.headers["idempotency-key"] == "refund-ORD-5521-r1"
    assert dict(parse_qsl(sent.content.decode())) == {"payment_intent": "pi_0001",
                                                     "metadata[client_reference]": "ORD-5521-r1"}
    order = await shop.http.get("/v1/orders/ORD-5521", headers=shop.merchant)
    assert order.json()["state"] == "Refunded"


async def test_a_refund_whose_answer_was_lost_is_resolved_by_stripes_refund_event(
        shop: Shop, stripe_api: StripeApi, clock: ManualClock) -> None:
    """Decision 0047 item 6: ``refund.*`` events are evidence about the refund attempt they name
    (by its reference and Stripe's refund id), through the pipeline's one notification application."""
    await pay(shop)
    assert (await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})).status_code == 200
    stripe_api.script = ["drop"]
    assert await run_refund(shop, await refund_job(shop)) == "Unknown"
    [created] = stripe_api.refunds.values()
    body = event("refund.updated", created, id="evt_refund_1")
    response = await shop.http.post(f"/v1/webhooks/{ENDPOINT}", content=body,
                                    headers={"Stripe-Signature": stripe_signature(body, int(clock.now().timestamp()))})
    assert response.status_code == 204
    [attempt] = await shop.services.db.fetch_all("SELECT * FROM payment_refund_attempts")
    assert (attempt["state"], attempt["provider_refund_id"]) == ("Succeeded", created["id"])
    assert (await shop.http.get("/v1/orders/ORD-5521", headers=shop.merchant)).json()["state"] == "Refunded"
