"""A refund rate-limited at its send (seed 000, "Provider rate-limits, documented
no-effect -> 1 call per send, bounded"; docs/decisions/0047 and 0055), on CardCo and on a Stripe
account served by the fake's Stripe dialect: what the 429 says about a resend decides the wait,
or that there is none."""

from __future__ import annotations

import asyncio

from gateway.clock import ManualClock
from tests.integration.clock_support import next_wake
from tests.integration.notifications.conftest import settings  # noqa: F401  (CardCo's and the fake's Stripe accounts)
from tests.integration.refunds.conftest import (
    Shop,
    order,
    refund_calls,
    refund_job,
    refund_rows,
    refunds_taken,
    run_refund,
)
from tests.stripe_support import STRIPE_ACCOUNT

STRIPE_REFUNDS = "/stripe/v1/refunds"


async def _refund_requested(shop: Shop) -> None:
    await shop.order()
    assert (await shop.pay()).json()["state"] == "Succeeded"
    response = await shop.http.post("/v1/orders/ORD-5521/refund", headers=shop.merchant, json={})
    assert response.status_code == 200, response.text


async def _resend_waits(shop: Shop, clock: ManualClock) -> list[float]:
    """Run the refund on the injected clock: the waits before each of its resends."""
    run = asyncio.create_task(run_refund(shop, await refund_job(shop)))
    waits = []
    while (wake := await next_wake(clock, run)) is not None:
        waits.append((wake - clock.now()).total_seconds())
        clock.set(wake)
    assert await run == "Succeeded"
    return waits


async def test_a_refund_429_without_retry_after_is_resent_after_1_s_then_2_s(shop: Shop, clock: ManualClock) -> None:
    """CardCo answers two 429s without Retry-After, then refunds: the resends, under the same key,
    wait 1 s and 2 s on the injected clock; one refund in all, and the order ends Refunded."""
    await _refund_requested(shop)
    await shop.faults({"operation": "refund_payment", "action": "rate_limit", "retry_after_s": None, "times": 2})
    assert await _resend_waits(shop, clock) == [1, 2]
    sent = refund_calls(shop)
    assert len(sent) == 3 and len({r["headers"]["idempotency-key"] for r in sent}) == 1
    assert len(refunds_taken(shop)) == 1
    assert (await order(shop))["state"] == "Refunded"


async def test_a_stripe_429_saying_do_not_retry_is_failed_after_its_one_send(shop: Shop) -> None:
    """Decision 0055: Stripe's 429 is a no-effect rejection (decision 0047), and with
    ``Stripe-Should-Retry: false`` resending fails the same way: no resend, no wait, the refund
    attempt Failed (seed 000: "Provider reports a rejection it documents as no-effect ... Failed"),
    nothing refunded, and the order still paid."""
    shop.account = STRIPE_ACCOUNT
    await _refund_requested(shop)
    await shop.faults({"operation": "refund_payment", "action": "rate_limit", "retry_after_s": None,
                       "should_retry": False, "times": 0})
    assert await run_refund(shop, await refund_job(shop)) == "Failed"
    assert len([r for r in shop.cardco.store.requests if r["path"] == STRIPE_REFUNDS and r["method"] == "POST"]) == 1
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert (attempt["state"], attempt["outcome_reason"], attempt["sends"]) == ("Failed", "provider.do-not-retry", 1)
    assert refunds_taken(shop) == []
    assert (await order(shop))["state"] == "Paid"


async def test_a_stripe_429_is_resent_after_1_s_then_2_s_whatever_its_retry_after(
        shop: Shop, clock: ManualClock) -> None:
    """Stripe does not document ``Retry-After`` (its rate-limits guide asks for an exponential
    backoff): paygate never relies on it, so two 429s saying ``Retry-After: 0`` are still resent
    after 1 s and 2 s, under the same key, inside the send deadline (docs/decisions/0059, 0072);
    one refund in all."""
    shop.account = STRIPE_ACCOUNT
    await _refund_requested(shop)
    await shop.faults({"operation": "refund_payment", "action": "rate_limit", "retry_after_s": 0, "times": 2})
    assert await _resend_waits(shop, clock) == [1, 2]
    sent = [r for r in shop.cardco.store.requests if r["path"] == STRIPE_REFUNDS and r["method"] == "POST"]
    assert len(sent) == 3 and len({r["headers"]["idempotency-key"] for r in sent}) == 1
    assert len(refunds_taken(shop)) == 1 and (await order(shop))["state"] == "Refunded"


async def test_a_stripe_legacy_400_rate_limit_is_a_rate_limit_not_a_failure(shop: Shop, clock: ManualClock) -> None:
    """Before API version 2015-09-08 Stripe answered a rate limit 400 with code ``rate_limit``
    (Stripe's changelog; the official package still raises it as ``RateLimitError``): it is resent
    like a 429, never Failed as an invalid request."""
    shop.account = STRIPE_ACCOUNT
    await _refund_requested(shop)
    await shop.faults({"operation": "refund_payment", "action": "rate_limit", "legacy_400": True,
                       "retry_after_s": None})
    assert await _resend_waits(shop, clock) == [1]
    [attempt] = await refund_rows(shop, "payment_refund_attempts")
    assert (attempt["state"], attempt["sends"]) == ("Succeeded", 2)
    assert len(refunds_taken(shop)) == 1 and (await order(shop))["state"] == "Refunded"


async def test_each_stripe_answer_keeps_its_request_id_in_the_attempts_history(shop: Shop, clock: ManualClock) -> None:
    """Support trail: every answer of a Stripe send is kept with Stripe's ``Request-Id`` (the fake's
    Stripe dialect sends one with every answer) in the refund attempt's provider observations, so a
    support ticket can name the request."""
    shop.account = STRIPE_ACCOUNT
    await _refund_requested(shop)
    await shop.faults({"operation": "refund_payment", "action": "rate_limit", "retry_after_s": None})
    assert await _resend_waits(shop, clock) == [1]
    observed = [e["detail"]["request_id"] for e in await refund_rows(shop, "payment_refund_history")
                if e["kind"] == "provider_observation"]
    assert len(observed) == 2 and all(r.startswith("req_") for r in observed) and observed[0] != observed[1]
