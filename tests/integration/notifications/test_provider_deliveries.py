"""Notifications delivered by the provider fake itself: real payments made through the gateway's
checkout, real signed webhooks posted by ``CardCo.deliver_pending()`` into the gateway's ASGI app,
and the fake's webhook faults (API.md "provider_fake: CardCo": ``duplicate``, ``omit_event_id``,
``tamper_amount``, ``bad_signature``, ``reorder``). Seed 004 matrix lines are cited per test.

Every test runs on CardCo's account and on a Stripe account in the fake's Stripe dialect
(``payment_intent.*`` Events signed with ``Stripe-Signature``), except ``omit_event_id``: Stripe
events always carry their id, so an unkeyed delivery is CardCo's alone."""

from __future__ import annotations

from typing import Any

from tests.integration.checkout.conftest import Shop
from tests.integration.conftest import CARDCO_ONLY
from tests.integration.notifications.conftest import Webhooks, named

LOST = {"operation": "create_payment", "action": "drop_response"}


async def unknown_payment(shop: Shop, *webhook_faults: dict[str, Any]) -> dict[str, Any]:
    """A payment CardCo took whose response was lost: the attempt is Unknown, only evidence resolves it."""
    await shop.order()
    await shop.faults(LOST, *webhook_faults)
    assert (await shop.pay()).status_code == 202
    [attempt] = await shop.attempts()
    assert attempt["state"] == "Unknown"
    return attempt


def states(deliveries: list[Any]) -> list[tuple[str, list[int]]]:
    return [(d.state, [a.get("status") for a in d.attempts]) for d in deliveries]


async def test_a_lost_response_is_resolved_by_the_providers_notification(shop: Shop, webhooks: Webhooks) -> None:
    """Matrix: "An attempt past its escalation deadline is never resent, but is still resolved by a
    later lookup or notification" (here: before it) and invariant 3: only evidence resolves Unknown."""
    attempt = await unknown_payment(shop)
    delivered = await shop.cardco.deliver_pending()
    assert states(delivered) == [("delivered", [204])]
    row = await webhooks.reload(attempt)
    assert (row["state"], row["provider_payment_id"]) == ("Succeeded", shop.ledger()[0]["id"])
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]


async def test_duplicate_deliveries_are_handled_once(shop: Shop, webhooks: Webhooks) -> None:
    """Matrix: "A redelivered notification with the same provider event ID ... is recorded once ...
    and queues no downstream work a second time" (CardCo ``duplicate``, count 2)."""
    attempt = await unknown_payment(shop, {"operation": "webhook", "action": "duplicate", "count": 2})
    assert states(await shop.cardco.deliver_pending()) == [("delivered", [204])] * 3
    assert len(await webhooks.notifications()) == 1
    assert await webhooks.transitions(attempt) == ["Unknown", "Succeeded"]
    assert await shop.outbox() == [f"attempt:{attempt['attempt_id']}:order-confirmation"]


@CARDCO_ONLY  # Stripe events always carry their id
async def test_an_event_without_its_id_is_recorded_unkeyed_and_applied(shop: Shop, webhooks: Webhooks) -> None:
    """Matrix: "An unkeyed notification is always recorded and handled" (CardCo ``omit_event_id``;
    the test account has no synthesized keys)."""
    attempt = await unknown_payment(shop, {"operation": "webhook", "action": "omit_event_id"})
    await shop.cardco.deliver_pending()
    [row] = await webhooks.notifications()
    assert (row["notification_key"], row["attempt_id"]) == (None, attempt["attempt_id"])
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"


async def test_a_tampered_amount_alerts_and_resolves_nothing(shop: Shop, webhooks: Webhooks) -> None:
    """Matrix: "A notification with ... a mismatched amount ... raises an alert and resolves nothing"
    (CardCo ``tamper_amount``: correctly signed, one minor unit more)."""
    attempt = await unknown_payment(shop, {"operation": "webhook", "action": "tamper_amount"})
    assert states(await shop.cardco.deliver_pending()) == [("delivered", [204])]
    assert (await webhooks.reload(attempt))["state"] == "Unknown"
    [episode] = await webhooks.escalations()
    assert episode["escalation_key"].startswith(f"attempt:{attempt['attempt_id']}:mismatch:evt_")
    assert episode["details"]["evidence_amount_minor"] == 4251


async def test_a_bad_signature_is_refused_and_a_clean_redelivery_is_handled(shop: Shop, webhooks: Webhooks) -> None:
    """API.md: 401 with nothing recorded; CardCo retries on non-2xx (``bad_signature``), and its
    clean redelivery of the same event is then handled normally."""
    attempt = await unknown_payment(shop, {"operation": "webhook", "action": "bad_signature"})
    [delivery] = await shop.cardco.deliver_pending()
    assert delivery.attempts[0]["status"] == 401 and delivery.state == "pending"
    assert await webhooks.notifications() == []
    shop.cardco.webhooks.redeliver(delivery.event.id)
    delivered = await shop.cardco.deliver_pending()
    assert [d.attempts[-1]["status"] for d in delivered] == [204]
    assert (await webhooks.reload(attempt))["state"] == "Succeeded"


async def test_reordered_events_end_at_the_final_outcome(shop: Shop, webhooks: Webhooks) -> None:
    """Seed 004: notifications "can arrive late, more than once, out of order". CardCo holds the
    ``processing`` event (``reorder``) and sends it after ``succeeded``: the late processing is
    recorded and changes nothing."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "processing", "complete_after_s": 5},
                      {"operation": "webhook", "action": "reorder", "nth": 1})
    assert (await shop.pay()).status_code == 202
    [attempt] = await shop.attempts()
    assert await shop.cardco.deliver_pending() == []  # processing is held
    webhooks.clock.advance(5)
    delivered = await shop.cardco.deliver_pending()
    assert [d.event.type for d in delivered] == named(shop.provider, "payment.succeeded", "payment.processing")
    assert [r["detail"]["type"] for r in await webhooks.notifications()] == named(
        shop.provider, "payment.succeeded", "payment.processing")
    row = await webhooks.reload(attempt)
    assert (row["state"], row["provider_status"]) == ("Succeeded", "succeeded")
    assert await webhooks.escalations() == []

