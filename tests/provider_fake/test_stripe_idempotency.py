"""Idempotency and response faults on the Stripe mount ("idempotency errors (same key,
other parameters) and Stripe's 24 h key window", "429s with Retry-After, and idempotency
replays"; docs/rehearsing-incidents.md "Stripe dialect"), through the official `stripe` client.
"""

from __future__ import annotations

import asyncio

import pytest
import stripe

from provider_fake import CardCo
from tests.provider_fake.stripe_support import OFFICIAL_CLIENT_WARNINGS, create_intent, intent_params, raw_client
from tests.provider_fake.support import set_faults

pytestmark = OFFICIAL_CLIENT_WARNINGS


async def ledger(control) -> list[dict]:
    return (await control.get("/ledger")).json()["payments"]


async def test_a_replay_answers_the_saved_response_marked_idempotent_replayed(stripe_client, control) -> None:
    first = await create_intent(stripe_client, key="k")
    second = await create_intent(stripe_client, key="k")
    assert second.id == first.id
    assert second.last_response.body == first.last_response.body
    assert "idempotent-replayed" not in first.last_response.headers
    assert second.last_response.headers["idempotent-replayed"] == "true"
    assert second.last_response.headers["idempotency-key"] == "k"
    assert len(await ledger(control)) == 1


async def test_a_saved_decline_is_replayed_as_the_same_402(stripe_client, control) -> None:
    with pytest.raises(stripe.CardError) as first:
        await create_intent(stripe_client, key="k", method="pm_card_visa_chargeDeclined")
    with pytest.raises(stripe.CardError) as second:
        await create_intent(stripe_client, key="k", method="pm_card_visa_chargeDeclined")
    assert second.value.http_body == first.value.http_body
    assert second.value.headers["idempotent-replayed"] == "true"
    assert len(await ledger(control)) == 1


async def test_the_same_key_with_other_parameters_is_400_idempotency_error(stripe_client, control) -> None:
    await create_intent(stripe_client, key="k", amount=100)
    with pytest.raises(stripe.IdempotencyError) as conflict:
        await create_intent(stripe_client, key="k", amount=200)
    assert (conflict.value.http_status, conflict.value.error.type) == (400, "idempotency_error")
    assert [p["amount_minor"] for p in await ledger(control)] == [100]


async def test_the_same_key_on_another_endpoint_is_an_idempotency_error(stripe_client) -> None:
    intent = await create_intent(stripe_client, key="k")
    with pytest.raises(stripe.IdempotencyError):
        await stripe_client.v1.refunds.create_async({"payment_intent": intent.id}, {"idempotency_key": "k"})


async def test_a_key_is_forgotten_after_24_hours(stripe_client, control, fake: CardCo) -> None:
    first = await create_intent(stripe_client, key="k")
    fake.clock.advance(86399)
    assert (await create_intent(stripe_client, key="k")).id == first.id
    fake.clock.advance(1)
    assert (await create_intent(stripe_client, key="k")).id != first.id
    assert len(await ledger(control)) == 2


async def test_without_a_key_every_request_takes_effect(stripe_client, control) -> None:
    """Stripe's keys are optional: without one nothing is deduplicated."""
    await create_intent(stripe_client, key=None)
    await create_intent(stripe_client, key=None)
    assert len(await ledger(control)) == 2


async def test_a_rate_limit_is_429_with_retry_after_and_no_effect(stripe_client, control) -> None:
    await set_faults(control, {"operation": "create_payment", "action": "rate_limit", "retry_after_s": 3})
    with pytest.raises(stripe.RateLimitError) as limited:
        await create_intent(stripe_client, key="k")
    assert (limited.value.http_status, limited.value.error.code, limited.value.headers["retry-after"]) == (
        429, "rate_limit", "3")
    assert await ledger(control) == []
    assert (await create_intent(stripe_client, key="k", amount=999)).amount == 999


async def test_a_rate_limit_may_leave_out_retry_after_and_say_stripe_should_retry(stripe_client, control) -> None:
    """Fault options: `retry_after_s: null` leaves `Retry-After` out (Stripe does
    not document it) and `should_retry` answers `Stripe-Should-Retry`; no effect either way."""
    await set_faults(control, {"operation": "create_payment", "action": "rate_limit", "retry_after_s": None,
                               "should_retry": False})
    with pytest.raises(stripe.RateLimitError) as limited:
        await create_intent(stripe_client, key="k")
    headers = limited.value.headers
    assert (limited.value.http_status, "retry-after" in headers, headers["stripe-should-retry"]) == (
        429, False, "false")
    assert await ledger(control) == []


async def test_a_legacy_rate_limit_is_a_400_the_official_client_reads_as_a_rate_limit(stripe_client, control) -> None:
    """`legacy_400`: a rate limit as API versions before 2015-09-08 answered it (Stripe's changelog,
    2015-09-08), 400 with code `rate_limit`, which the official package still raises as
    `RateLimitError`, not as an invalid request; no effect."""
    await set_faults(control, {"operation": "create_payment", "action": "rate_limit", "legacy_400": True,
                               "retry_after_s": None})
    with pytest.raises(stripe.RateLimitError) as limited:
        await create_intent(stripe_client, key="k")
    assert (limited.value.http_status, limited.value.error.code) == (400, "rate_limit")
    assert await ledger(control) == []


async def test_a_request_under_a_key_still_executing_is_409_and_does_nothing(stripe_client, control) -> None:
    """`hold_key_ms`: the first create keeps its key executing 300 ms; a concurrent one under the
    same key is 409 `idempotency_key_in_use` with `Stripe-Should-Retry: true` (Stripe's idempotency
    guide: a request that conflicts with one executing concurrently saves no result and is safe to
    retry; the official package retries a 409 when it may retry at all); one charge, and the same
    key afterwards replays the first request's answer."""
    await set_faults(control, {"operation": "create_payment", "action": "hold_key_ms", "delay_ms": 300})
    first = asyncio.create_task(create_intent(stripe_client, key="k"))
    await asyncio.sleep(0.1)
    with pytest.raises(stripe.APIError) as concurrent:
        await create_intent(stripe_client, key="k")
    error = concurrent.value
    assert (error.http_status, error.error.type, error.error.code, error.headers["stripe-should-retry"]) == (
        409, "idempotency_error", "idempotency_key_in_use", "true")
    created = await first
    assert (await create_intent(stripe_client, key="k")).id == created.id
    assert len(await ledger(control)) == 1


async def test_a_dropped_response_after_the_effect_then_the_same_key_finds_it(stripe_client, control) -> None:
    """The lost response: the client sees a connection error, the PaymentIntent exists, and the
    resend under the key answers it (replayed) without a second charge."""
    await set_faults(control, {"operation": "create_payment", "action": "drop_response"})
    with pytest.raises(stripe.APIConnectionError):
        await create_intent(stripe_client, key="k")
    [entry] = await ledger(control)
    replay = await create_intent(stripe_client, key="k")
    assert (replay.id, replay.last_response.headers["idempotent-replayed"]) == (entry["id"], "true")
    assert len(await ledger(control)) == 1


async def test_a_500_after_the_effect_is_saved_and_replayed(stripe_client, control) -> None:
    await set_faults(control, {"operation": "create_payment", "action": "error_500_after_effect"})
    with pytest.raises(stripe.APIError) as first:
        await create_intent(stripe_client, key="k")
    with pytest.raises(stripe.APIError) as second:
        await create_intent(stripe_client, key="k")
    assert (first.value.http_status, first.value.error.type) == (500, "api_error")
    assert second.value.http_body == first.value.http_body
    assert second.value.headers["idempotent-replayed"] == "true"
    assert [p["status"] for p in await ledger(control)] == ["succeeded"]


async def test_a_503_before_the_effect_saves_nothing(stripe_client, control) -> None:
    await set_faults(control, {"operation": "create_payment", "action": "error_500_before_effect", "status": 503})
    with pytest.raises(stripe.APIError) as refused:
        await create_intent(stripe_client, key="k")
    assert refused.value.http_status == 503 and await ledger(control) == []
    assert (await create_intent(stripe_client, key="k")).status == "succeeded"


async def test_invalid_parameters_save_nothing_under_the_key(fake: CardCo, control) -> None:
    """Stripe saves a result only once the endpoint ran: a 400 on the parameters leaves the key
    fresh for the corrected request."""
    async with raw_client(fake) as client:
        refused = await client.post("/v1/payment_intents", data={"currency": "eur"}, headers={"Idempotency-Key": "k"})
        body = intent_params()
        form = {"amount": body["amount"], "currency": "eur", "confirm": "true", "payment_method": "pm_card_visa",
                "metadata[client_reference]": "ORD-1-a1"}
        accepted = await client.post("/v1/payment_intents", data=form, headers={"Idempotency-Key": "k"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "parameter_missing")
    assert (accepted.status_code, accepted.json()["metadata"]) == (200, {"client_reference": "ORD-1-a1"})
    assert "idempotent-replayed" not in accepted.headers
