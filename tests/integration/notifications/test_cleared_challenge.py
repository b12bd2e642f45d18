"""A challenge the provider still waits for, cleared by the endpoint's own timeout.

Seed 004, "The Checkout Endpoint": recording a later outcome clears the customer action, and an
Unknown attempt never surfaces a stale challenge. When the provider's requires_action
notification recorded the challenge first and the endpoint's call then timed out, the Unknown it
records clears the challenge the customer still has to complete; the attempt is then due for a
lookup at once, so recovery brings the challenge back within one clock tick, and
``provider_status`` never shows a value the recorded state contradicts. Real PostgreSQL, the
real provider fake (its payment, its signed webhook into the gateway app) and one ManualClock.

On CardCo's account and on a Stripe account in the fake's Stripe dialect (its
``payment_intent.requires_action`` Event, signed with ``Stripe-Signature``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from gateway.clock import ManualClock
from gateway.recovery.loop import Recovery
from tests.integration.checkout.conftest import Shop
from tests.integration.notifications.conftest import named

CALL_BUDGET_S = 15
# The challenge each provider asks the customer to complete, as its next_action type.
CHALLENGES = {"cardco": "redirect_to_url", "stripe": "use_stripe_sdk"}


async def _a_slow_challenge(shop: Shop) -> asyncio.Task[httpx.Response]:
    """A 3-D Secure payment the provider takes (and announces) while its answer to the endpoint is slow."""
    await shop.order(payment_method="pm_card_3ds")
    await shop.faults({"operation": "create_payment", "action": "delay_ms", "delay_ms": 60_000})
    paying = asyncio.create_task(shop.pay())
    for _ in range(500):
        if shop.provider_requests():
            return paying
        await asyncio.sleep(0.01)
    raise AssertionError("the provider never received the payment")


async def _notify(shop: Shop) -> None:
    deliveries = await shop.cardco.deliver_pending()
    assert [(d.event.type, d.state) for d in deliveries] == [(*named(shop.provider, "payment.requires_action"),
                                                              "delivered")]


async def _time_out(paying: asyncio.Task[httpx.Response], clock: ManualClock) -> dict[str, Any]:
    clock.advance(CALL_BUDGET_S)
    response = await asyncio.wait_for(paying, 10)
    assert response.status_code == 202, response.text
    return dict(response.json())


@pytest.mark.parametrize("order", ["notification-then-timeout", "timeout-then-notification"])
async def test_a_challenge_cleared_by_the_endpoints_timeout_is_back_within_one_clock_tick(
        shop: Shop, clock: ManualClock, order: str) -> None:
    """Both orders of arrival: whichever of the provider's requires_action notification
    and the endpoint's timeout is recorded first, one clock tick later the status GET presents
    the provider's challenge again, and no status ever contradicts the recorded state."""
    paying = await _a_slow_challenge(shop)
    if order == "notification-then-timeout":
        await _notify(shop)
        challenged = await shop.status()
        assert challenged.status_code == 200 and challenged.json()["next_action"] is not None
        unknown = await _time_out(paying, clock)
        [attempt] = await shop.attempts()
        # The challenge is cleared (never shown on Unknown), the stale status with it, and the
        # attempt is due for a lookup now rather than after a backoff step.
        assert (unknown["state"], unknown["next_action"], unknown["provider_status"]) == ("Unknown", None, None)
        assert (attempt["state"], attempt["provider_status"], attempt["next_action"]) == ("Unknown", None, None)
        assert attempt["next_check_at"] <= clock.now()
    else:
        unknown = await _time_out(paying, clock)
        assert (unknown["state"], unknown["provider_status"]) == ("Unknown", None)
        await _notify(shop)

    clock.advance(shop.services.settings.clock_tick_s)
    services = shop.services
    await Recovery(services.settings, clock, services.db, services.attempts, services.payments).sweep()
    polled = await shop.status()
    assert polled.status_code == 200, polled.text
    body = polled.json()
    assert (body["state"], body["provider_status"]) == ("Started", "requires_action")
    assert body["next_action"]["type"] == CHALLENGES[shop.provider]
    assert len(shop.ledger()) == 1  # one payment, never resent while the customer is asked to act
