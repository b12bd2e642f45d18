"""PaymentIntents on the Stripe dialect's mount ("Rehearsal": CardCo speaks Stripe's
dialect; docs/rehearsing-incidents.md "Stripe dialect"), driven by the official `stripe` client:
every status path, Stripe's card error shape, authentication and validation errors.
"""

from __future__ import annotations

import pytest
import stripe

from provider_fake import CardCo
from tests.provider_fake.stripe_support import OFFICIAL_CLIENT_WARNINGS, create_intent, raw_client
from tests.provider_fake.support import CARDCO_URL, STRIPE_ACCOUNT, client_for, pay, set_faults

pytestmark = OFFICIAL_CLIENT_WARNINGS


async def test_a_confirmed_payment_intent_succeeds_in_stripes_shape(stripe_client, control) -> None:
    intent = await create_intent(stripe_client)
    assert (intent.object, intent.status, intent.amount, intent.amount_received) == (
        "payment_intent", "succeeded", 4250, 4250)
    assert (intent.currency, intent.payment_method, intent.metadata["client_reference"]) == (
        "eur", "pm_card_visa", "ORD-1-a1")
    assert intent.id.startswith("pi_") and intent.latest_charge.startswith("ch_")
    assert intent.last_payment_error is None and intent.next_action is None
    headers = intent.last_response.headers
    assert headers["stripe-version"] == stripe.api_version and headers["request-id"].startswith("req_")
    [entry] = (await control.get("/ledger")).json()["payments"]
    assert (entry["id"], entry["account"], entry["client_reference"], entry["status"]) == (
        intent.id, STRIPE_ACCOUNT, "ORD-1-a1", "succeeded")


async def test_a_declined_card_is_a_402_card_error_naming_the_payment_intent(stripe_client, control) -> None:
    """Stripe's card error: type card_error, code card_declined, the test method's decline_code;
    the PaymentIntent exists, requires_payment_method with the same last_payment_error."""
    with pytest.raises(stripe.CardError) as declined:
        await create_intent(stripe_client, method="pm_card_visa_chargeDeclinedInsufficientFunds")
    error = declined.value
    assert (error.http_status, error.code, error.error.type, error.error.decline_code) == (
        402, "card_declined", "card_error", "insufficient_funds")
    intent = error.error.payment_intent
    assert intent.status == "requires_payment_method"
    assert (intent.last_payment_error.code, intent.last_payment_error.decline_code) == (
        "card_declined", "insufficient_funds")
    assert intent.last_payment_error.payment_method.id == "pm_card_visa_chargeDeclinedInsufficientFunds"
    retrieved = await stripe_client.v1.payment_intents.retrieve_async(intent.id)
    assert (retrieved.status, retrieved.last_payment_error.charge) == ("requires_payment_method", intent.latest_charge)
    assert [p["status"] for p in (await control.get("/ledger")).json()["payments"]] == ["failed"]


@pytest.mark.parametrize(("method", "code", "decline_code"), [
    ("pm_card_visa_chargeDeclined", "card_declined", "generic_decline"),
    ("pm_card_chargeDeclinedExpiredCard", "expired_card", None),
    ("pm_card_chargeDeclinedIncorrectCvc", "incorrect_cvc", None),
])
async def test_each_documented_declining_test_method_has_its_error_code(stripe_client, method, code,
                                                                        decline_code) -> None:
    with pytest.raises(stripe.CardError) as declined:
        await create_intent(stripe_client, method=method)
    assert (declined.value.code, declined.value.error.decline_code) == (code, decline_code)


async def test_a_method_expired_through_the_control_api_is_declined_expired_card(stripe_client, control) -> None:
    """The shared payment-method expiry (docs/rehearsing-incidents.md "Payment methods"): Stripe's
    mount declines with expired_card, and the PaymentMethod shows an expiry in the past."""
    await control.post("/payment_methods/pm_card_visa/expire")
    with pytest.raises(stripe.CardError) as declined:
        await create_intent(stripe_client)
    assert declined.value.code == "expired_card"
    method = await stripe_client.v1.payment_methods.retrieve_async("pm_card_visa")
    usable = await stripe_client.v1.payment_methods.retrieve_async("pm_card_mastercard")
    assert (method.card.exp_year, method.card.exp_month) < (2026, 11) < (usable.card.exp_year, usable.card.exp_month)


async def test_3d_secure_requires_action_then_the_customer_authenticates(stripe_client, control) -> None:
    """requires_action with next_action redirect_to_url (a return_url was given), which leads to the
    authenticate control endpoint; success makes it succeeded with a charge."""
    intent = await create_intent(stripe_client, method="pm_card_authenticationRequired",
                                 return_url="https://shop.test/return")
    assert (intent.status, intent.next_action.type, intent.latest_charge) == ("requires_action", "redirect_to_url", None)
    assert intent.next_action.redirect_to_url.return_url == "https://shop.test/return"
    url = intent.next_action.redirect_to_url.url
    assert url == f"{CARDCO_URL}/_control/payments/{intent.id}/authenticate"
    assert (await control.post(url.removeprefix(CARDCO_URL + "/_control"), json={"result": "succeeded"})).status_code == 200
    done = await stripe_client.v1.payment_intents.retrieve_async(intent.id)
    assert (done.status, done.next_action) == ("succeeded", None) and done.latest_charge.startswith("ch_")


async def test_failed_authentication_returns_to_requires_payment_method(stripe_client, control) -> None:
    intent = await create_intent(stripe_client, method="pm_card_threeDSecure2Required")
    assert (intent.next_action.type, intent.next_action.use_stripe_sdk.type) == (
        "use_stripe_sdk", "three_d_secure_redirect")
    await control.post(f"/payments/{intent.id}/authenticate", json={"result": "failed"})
    failed = await stripe_client.v1.payment_intents.retrieve_async(intent.id)
    assert (failed.status, failed.last_payment_error.code) == (
        "requires_payment_method", "payment_intent_authentication_failure")


async def test_a_processing_rule_completes_by_the_fake_clock(stripe_client, control, fake: CardCo) -> None:
    await set_faults(control, {"operation": "create_payment", "action": "processing", "complete_after_s": 60},
                     {"operation": "create_payment", "action": "processing", "nth": 2, "final_status": "failed",
                      "code": "insufficient_funds"})
    paid = await create_intent(stripe_client, key="k1", reference="ORD-1-a1")
    unpaid = await create_intent(stripe_client, key="k2", reference="ORD-2-a1")
    assert (paid.status, unpaid.status) == ("processing", "processing")
    fake.clock.advance(60)
    paid = await stripe_client.v1.payment_intents.retrieve_async(paid.id)
    unpaid = await stripe_client.v1.payment_intents.retrieve_async(unpaid.id)
    assert (paid.status, unpaid.status) == ("succeeded", "requires_payment_method")
    assert unpaid.last_payment_error.decline_code == "insufficient_funds"


async def test_manual_capture_waits_in_requires_capture(stripe_client) -> None:
    intent = await create_intent(stripe_client, capture_method="manual")
    assert (intent.status, intent.amount_capturable, intent.amount_received) == ("requires_capture", 4250, 0)
    captured = await stripe_client.v1.payment_intents.capture_async(intent.id)
    assert (captured.status, captured.amount_received) == ("succeeded", 4250)


async def test_cancel_is_allowed_before_success_and_refused_after(stripe_client) -> None:
    waiting = await create_intent(stripe_client, key="k1", method="pm_card_authenticationRequired")
    canceled = await stripe_client.v1.payment_intents.cancel_async(
        waiting.id, {"cancellation_reason": "abandoned"})
    assert (canceled.status, canceled.cancellation_reason, canceled.next_action) == ("canceled", "abandoned", None)
    assert canceled.canceled_at is not None
    paid = await create_intent(stripe_client, key="k2", reference="ORD-2-a1")
    with pytest.raises(stripe.InvalidRequestError) as refused:
        await stripe_client.v1.payment_intents.cancel_async(paid.id)
    assert (refused.value.http_status, refused.value.code) == (400, "payment_intent_unexpected_state")


async def test_an_unconfirmed_payment_intent_waits_for_confirmation(stripe_client) -> None:
    without = await stripe_client.v1.payment_intents.create_async({"amount": 100, "currency": "usd"})
    with_method = await stripe_client.v1.payment_intents.create_async(
        {"amount": 100, "currency": "usd", "payment_method": "pm_card_visa"})
    assert (without.status, with_method.status) == ("requires_payment_method", "requires_confirmation")
    assert without.latest_charge is None


async def test_invalid_parameters_are_stripes_400s_with_the_param(stripe_client) -> None:
    with pytest.raises(stripe.InvalidRequestError) as missing:
        await stripe_client.v1.payment_intents.create_async({"currency": "eur"})  # type: ignore[typeddict-item]
    assert (missing.value.code, missing.value.param) == ("parameter_missing", "amount")
    with pytest.raises(stripe.InvalidRequestError) as unknown:
        await stripe_client.v1.payment_intents.create_async({"amount": 1, "currency": "eur", "colour": "red"})  # type: ignore[typeddict-unknown-key]
    assert (unknown.value.code, unknown.value.param) == ("parameter_unknown", "colour")
    with pytest.raises(stripe.InvalidRequestError) as no_method:
        await create_intent(stripe_client, method="tok_visa")
    assert (no_method.value.http_status, no_method.value.code, no_method.value.param) == (
        400, "resource_missing", "payment_method")


async def test_unknown_objects_are_404_resource_missing(stripe_client) -> None:
    with pytest.raises(stripe.InvalidRequestError) as missing:
        await stripe_client.v1.payment_intents.retrieve_async("pi_unknown")
    assert (missing.value.http_status, missing.value.code) == (404, "resource_missing")
    assert (missing.value.param, missing.value.user_message) == ("intent", "No such payment_intent: 'pi_unknown'")


async def test_only_a_stripe_key_opens_the_stripe_mount_and_only_a_cardco_key_cardcos(fake: CardCo) -> None:
    """The key names the account on Stripe's mount; CardCo's keys are 401 there, and Stripe's
    keys are 401 on CardCo's mount even with the account header."""
    async with raw_client(fake, key="ck_test_k1") as wrong, raw_client(fake) as right:
        refused = await wrong.get("/v1/payment_intents/pi_x")
        assert (refused.status_code, refused.json()["error"]["type"]) == (401, "invalid_request_error")
        assert (await right.get("/v1/payment_intents/pi_x")).status_code == 404
        basic = await right.get("/v1/payment_intents/pi_x", auth=("sk_test_k1", ""),
                                headers={"Authorization": ""})
        assert basic.status_code == 404
    async with client_for(fake, account=STRIPE_ACCOUNT, key="sk_test_k1") as cardco:
        assert (await pay(cardco)).status_code == 401


async def test_the_stripe_version_is_echoed_and_a_malformed_one_refused(fake: CardCo) -> None:
    async with raw_client(fake) as client:
        pinned = await client.get("/v1/payment_methods/pm_card_visa", headers={"Stripe-Version": "2025-03-31.basil"})
        default = await client.get("/v1/payment_methods/pm_card_visa")
        malformed = await client.get("/v1/payment_methods/pm_card_visa", headers={"Stripe-Version": "latest"})
    assert pinned.headers["stripe-version"] == "2025-03-31.basil"
    assert default.headers["stripe-version"] == fake.config.account(STRIPE_ACCOUNT).api_version
    assert (malformed.status_code, malformed.json()["error"]["type"]) == (400, "invalid_request_error")


async def test_unknown_stripe_paths_answer_in_stripes_shape(fake: CardCo) -> None:
    async with raw_client(fake) as client:
        response = await client.get("/v1/charges_unknown")
    assert response.status_code == 404
    assert response.json() == {"error": {"message": "Unrecognized request URL (GET: /v1/charges_unknown).",
                                         "type": "invalid_request_error"}}
