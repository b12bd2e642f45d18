"""Webhooks of the Stripe dialect ("Webhooks verified by the Stripe-Signature header
(t= and one or more v1=; HMAC-SHA256 over {t}.{raw body} with the endpoint secret; ... several
secrets during rotation)"; docs/rehearsing-incidents.md "Stripe dialect"): Event objects the
official `stripe` package verifies and parses, and the shared webhook faults.
"""

from __future__ import annotations

import pytest
import stripe

from provider_fake import Account, CardCo, Clock
from provider_fake.stripe.webhooks import signature_header
from tests.provider_fake.stripe_support import (
    OFFICIAL_CLIENT_WARNINGS,
    create_intent,
    official_client,
    stripe_events,
)
from tests.provider_fake.support import (
    RECEIVER_URL,
    START,
    STRIPE_ACCOUNT,
    STRIPE_KEY,
    STRIPE_SECRET,
    make_config,
    set_faults,
)

pytestmark = OFFICIAL_CLIENT_WARNINGS

ROTATED_IN = "whsec_stripe_rotated_in_secret_02"


def verified(received: dict, secret: str = STRIPE_SECRET, tolerance: int | None = None) -> stripe.Event:
    """The delivery through `stripe.Webhook.construct_event` (the fake clock is fixed in the past,
    so the timestamp tolerance is checked only where a test says so)."""
    return stripe.Webhook.construct_event(received["body"], received["headers"]["stripe-signature"], secret,
                                          tolerance=tolerance)  # type: ignore[arg-type]


def test_the_signature_header_is_the_one_the_official_package_makes() -> None:
    body = b'{"id": "evt_1", "object": "event"}'
    expected = stripe.WebhookSignature.generate_signature_header(body.decode(), STRIPE_SECRET, timestamp=1700000000)
    assert signature_header([STRIPE_SECRET], 1700000000, body) == expected


async def test_a_succeeded_payment_intent_is_announced_as_a_verified_stripe_event(
    stripe_client, fake: CardCo, receiver
) -> None:
    intent = await create_intent(stripe_client)
    await fake.deliver_pending()
    [received] = receiver.received
    event = verified(received)
    assert (event.type, event.object, event.data.object.id, event.data.object.status) == (
        "payment_intent.succeeded", "event", intent.id, "succeeded")
    assert event.id.startswith("evt_") and event.created == int(START.timestamp())
    assert (event.api_version, event.livemode) == (fake.config.account(STRIPE_ACCOUNT).api_version, False)
    assert event.data.object.metadata["client_reference"] == "ORD-1-a1"
    assert received["headers"]["stripe-signature"].startswith(f"t={int(START.timestamp())},v1=")


async def test_a_delivery_made_now_passes_the_default_300_s_tolerance(receiver, receiver_client) -> None:
    """With the fake clock on real time, `construct_event` with its default tolerance accepts it."""
    fake = CardCo(make_config(), clock=Clock(), http_client=receiver_client)
    async with official_client(fake) as client:
        await create_intent(client)
    await fake.deliver_pending()
    assert verified(receiver.received[0], tolerance=stripe.Webhook.DEFAULT_TOLERANCE).type == "payment_intent.succeeded"


@pytest.mark.parametrize(("method", "event_type"), [
    ("pm_card_visa_chargeDeclined", "payment_intent.payment_failed"),
    ("pm_card_authenticationRequired", "payment_intent.requires_action"),
])
async def test_each_outcome_has_its_event_type(stripe_client, fake: CardCo, receiver, method, event_type) -> None:
    try:
        await create_intent(stripe_client, method=method)
    except stripe.CardError:
        pass
    await fake.deliver_pending()
    assert [verified(r).type for r in receiver.received] == [event_type]


async def test_a_cancel_is_announced_as_payment_intent_canceled(stripe_client, fake: CardCo, receiver) -> None:
    intent = await create_intent(stripe_client, method="pm_card_authenticationRequired")
    await stripe_client.v1.payment_intents.cancel_async(intent.id)
    await fake.deliver_pending()
    assert [e["type"] for e in stripe_events(receiver.received)] == [
        "payment_intent.requires_action", "payment_intent.canceled"]


async def test_during_rotation_every_secret_signs_and_each_verifies(stripe_client, fake: CardCo, receiver) -> None:
    account = fake.config.account(STRIPE_ACCOUNT).model_copy(update={"webhook_secrets": [STRIPE_SECRET, ROTATED_IN]})
    fake.replace_accounts([a if a.id != STRIPE_ACCOUNT else account for a in fake.config.accounts])
    await create_intent(stripe_client)
    await fake.deliver_pending()
    [received] = receiver.received
    assert received["headers"]["stripe-signature"].count(",v1=") == 2
    assert verified(received, STRIPE_SECRET).id == verified(received, ROTATED_IN).id


async def test_bad_signature_fails_verification(stripe_client, fake: CardCo, control, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "bad_signature"})
    await create_intent(stripe_client)
    await fake.deliver_pending()
    with pytest.raises(stripe.SignatureVerificationError):
        verified(receiver.received[0])


async def test_duplicates_carry_the_same_event_id(stripe_client, fake: CardCo, control, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "duplicate", "count": 2})
    await create_intent(stripe_client)
    await fake.deliver_pending()
    assert len({verified(r).id for r in receiver.received}) == 1 and len(receiver.received) == 3


async def test_a_reordered_event_arrives_after_the_next_one(stripe_client, fake: CardCo, control, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "reorder", "client_reference": "ORD-1-a1"})
    await create_intent(stripe_client, key="k1", reference="ORD-1-a1")
    await create_intent(stripe_client, key="k2", reference="ORD-2-a1")
    await fake.deliver_pending()
    assert [e["data"]["object"]["metadata"]["client_reference"] for e in stripe_events(receiver.received)] == [
        "ORD-2-a1", "ORD-1-a1"]


async def test_tamper_amount_changes_stripes_amount_field_under_a_valid_signature(
    stripe_client, fake: CardCo, control, receiver
) -> None:
    await set_faults(control, {"operation": "webhook", "action": "tamper_amount"})
    await create_intent(stripe_client, amount=4250)
    await fake.deliver_pending()
    assert verified(receiver.received[0]).data.object.amount == 4251


async def test_a_redelivery_keeps_the_event_id_and_signs_anew(stripe_client, fake: CardCo, control, receiver) -> None:
    await set_faults(control, {"operation": "webhook", "action": "drop"})
    await create_intent(stripe_client)
    await fake.deliver_pending()
    assert receiver.received == []
    [event] = (await control.get("/webhooks")).json()["events"]
    assert (event["object"], event["type"], event["account"]) == ("event", "payment_intent.succeeded", STRIPE_ACCOUNT)
    await control.post(f"/webhooks/redeliver/{event['id']}")
    assert verified(receiver.received[0]).id == event["id"]


async def test_failed_deliveries_are_retried_by_the_fake_clock(stripe_client, fake: CardCo, receiver) -> None:
    receiver.fail_first = 1
    await create_intent(stripe_client)
    await fake.deliver_pending()
    fake.clock.advance(1)
    await fake.deliver_pending()
    first, second = receiver.received
    assert verified(first).id == verified(second).id


async def test_only_enabled_event_types_are_sent(stripe_client, fake: CardCo, receiver, control) -> None:
    account = Account(id=STRIPE_ACCOUNT, api_key=STRIPE_KEY, dialect="stripe", webhook_url=RECEIVER_URL,
                      webhook_secrets=[STRIPE_SECRET], enabled_events=["payment_intent.payment_failed"])
    fake.replace_accounts([a if a.id != STRIPE_ACCOUNT else account for a in fake.config.accounts])
    await create_intent(stripe_client)
    await fake.deliver_pending()
    assert receiver.received == []
    assert [e["type"] for e in (await control.get("/webhooks")).json()["events"]] == ["payment_intent.succeeded"]


async def test_a_live_key_makes_live_objects_and_events(fake: CardCo, receiver) -> None:
    """`livemode` follows the key, as Stripe's does: `sk_live_...` objects and events are live."""
    live = Account(id="stripe:acct_store:live", api_key="sk_live_k1", dialect="stripe", webhook_url=RECEIVER_URL,
                   webhook_secrets=[STRIPE_SECRET])
    fake.replace_accounts([*fake.config.accounts, live])
    async with official_client(fake, key="sk_live_k1") as client:
        intent = await create_intent(client)
    await fake.deliver_pending()
    assert intent.livemode is True and verified(receiver.received[0]).livemode is True
