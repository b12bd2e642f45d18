"""Refunds and payouts on the Stripe mount ("Refunds and payouts ... through Stripe's
refunds and payouts APIs"; docs/rehearsing-incidents.md "Stripe dialect"), with their events.
"""

from __future__ import annotations

import pytest
import stripe

from provider_fake import CardCo
from tests.provider_fake.stripe_support import OFFICIAL_CLIENT_WARNINGS, create_intent, stripe_events
from tests.provider_fake.support import set_faults

pytestmark = OFFICIAL_CLIENT_WARNINGS

REFUND = {"metadata": {"client_reference": "ORD-1-r1"}}


async def refund(client: stripe.StripeClient, intent_id: str, key: str = "refund-1", **extra) -> stripe.Refund:
    return await client.v1.refunds.create_async({"payment_intent": intent_id, **REFUND, **extra},
                                                {"idempotency_key": key})


async def payout(client: stripe.StripeClient, key: str = "payout-1", reference: str = "PO-1-a1") -> stripe.Payout:
    params = {"amount": 10000, "currency": "eur", "destination": "ba_dest_1",
              "metadata": {"client_reference": reference}}
    return await client.v1.payouts.create_async(params, {"idempotency_key": key})  # type: ignore[arg-type]


async def test_a_full_refund_succeeds_and_announces_the_refunded_charge(
    stripe_client, fake: CardCo, control, receiver
) -> None:
    intent = await create_intent(stripe_client)
    made = await refund(stripe_client, intent.id)
    assert (made.object, made.status, made.amount, made.payment_intent, made.charge) == (
        "refund", "succeeded", 4250, intent.id, intent.latest_charge)
    assert made.metadata["client_reference"] == "ORD-1-r1"
    assert (await stripe_client.v1.refunds.retrieve_async(made.id)).status == "succeeded"
    listed = await stripe_client.v1.refunds.list_async({"payment_intent": intent.id})
    assert [r.id for r in listed.data] == [made.id]
    await fake.deliver_pending()
    events = stripe_events(receiver.received)
    assert [e["type"] for e in events] == ["payment_intent.succeeded", "refund.created", "charge.refunded"]
    charge = events[2]["data"]["object"]
    assert (charge["object"], charge["id"], charge["refunded"], charge["amount_refunded"], charge["payment_intent"]) == (
        "charge", intent.latest_charge, True, 4250, intent.id)
    assert (await stripe_client.v1.payment_intents.retrieve_async(intent.id)).status == "succeeded"
    [entry] = (await control.get("/ledger")).json()["refunds"]
    assert (entry["id"], entry["payment"], entry["client_reference"]) == (made.id, intent.id, "ORD-1-r1")


async def test_a_second_refund_is_charge_already_refunded(stripe_client) -> None:
    intent = await create_intent(stripe_client)
    await refund(stripe_client, intent.id, key="r1")
    with pytest.raises(stripe.InvalidRequestError) as refused:
        await refund(stripe_client, intent.id, key="r2")
    assert (refused.value.http_status, refused.value.code) == (400, "charge_already_refunded")


async def test_an_unpaid_payment_intent_cannot_be_refunded(stripe_client) -> None:
    with pytest.raises(stripe.CardError) as declined:
        await create_intent(stripe_client, method="pm_card_visa_chargeDeclined")
    with pytest.raises(stripe.InvalidRequestError) as refused:
        await refund(stripe_client, declined.value.error.payment_intent.id)
    assert refused.value.code == "payment_intent_unexpected_state"
    with pytest.raises(stripe.InvalidRequestError) as unknown:
        await refund(stripe_client, "pi_unknown", key="r2")
    assert (unknown.value.http_status, unknown.value.code, unknown.value.param) == (
        400, "resource_missing", "payment_intent")


async def test_a_pending_refund_completes_by_the_fake_clock(stripe_client, fake: CardCo, control, receiver) -> None:
    await set_faults(control, {"operation": "refund_payment", "action": "processing", "complete_after_s": 30})
    intent = await create_intent(stripe_client)
    pending = await refund(stripe_client, intent.id)
    assert pending.status == "pending"
    fake.clock.advance(30)
    assert (await stripe_client.v1.refunds.retrieve_async(pending.id)).status == "succeeded"
    await fake.deliver_pending()
    assert [e["type"] for e in stripe_events(receiver.received)][1:] == [
        "refund.created", "refund.updated", "charge.refunded"]


async def test_a_declined_refund_fails_with_its_reason(stripe_client, fake: CardCo, control, receiver) -> None:
    await set_faults(control, {"operation": "refund_payment", "action": "decline",
                               "code": "expired_or_canceled_card"})
    intent = await create_intent(stripe_client)
    failed = await refund(stripe_client, intent.id)
    assert (failed.status, failed.failure_reason) == ("failed", "expired_or_canceled_card")
    await fake.deliver_pending()
    assert [e["type"] for e in stripe_events(receiver.received)][1:] == ["refund.failed"]
    assert (await control.get("/ledger")).json()["refunds"] == []


async def test_a_payout_is_pending_then_in_transit_then_paid(stripe_client, fake: CardCo, control, receiver) -> None:
    made = await payout(stripe_client)
    assert (made.object, made.status, made.amount, made.currency, made.destination, made.type) == (
        "payout", "pending", 10000, "eur", "ba_dest_1", "bank_account")
    fake.clock.advance(2)
    assert (await stripe_client.v1.payouts.retrieve_async(made.id)).status == "in_transit"
    fake.clock.advance(2)
    paid = await stripe_client.v1.payouts.retrieve_async(made.id)
    assert (paid.status, paid.arrival_date) == ("paid", made.created + 4)
    await fake.deliver_pending()
    assert [e["type"] for e in stripe_events(receiver.received)] == ["payout.created", "payout.updated", "payout.paid"]
    assert [p["status"] for p in (await control.get("/ledger")).json()["payouts"]] == ["paid"]


async def test_a_declined_payout_fails_later_with_its_failure_code(stripe_client, fake: CardCo, control) -> None:
    await set_faults(control, {"operation": "create_payout", "action": "decline", "code": "no_account"})
    made = await payout(stripe_client)
    assert made.status == "pending"
    fake.clock.advance(4)
    failed = await stripe_client.v1.payouts.retrieve_async(made.id)
    assert (failed.status, failed.failure_code) == ("failed", "no_account")
    assert failed.failure_message.startswith("The bank account details on file are probably incorrect")


async def test_only_a_pending_payout_can_be_canceled(stripe_client, fake: CardCo, receiver) -> None:
    pending = await payout(stripe_client, key="p1", reference="PO-1-a1")
    canceled = await stripe_client.v1.payouts.cancel_async(pending.id)
    assert canceled.status == "canceled"
    fake.clock.advance(10)
    assert (await stripe_client.v1.payouts.retrieve_async(pending.id)).status == "canceled"
    moving = await payout(stripe_client, key="p2", reference="PO-2-a1")
    fake.clock.advance(2)
    with pytest.raises(stripe.InvalidRequestError):
        await stripe_client.v1.payouts.cancel_async(moving.id)
    await fake.deliver_pending()
    assert "payout.canceled" in [e["type"] for e in stripe_events(receiver.received)]


async def test_a_paid_payout_that_comes_back_is_failed(stripe_client, fake: CardCo, control) -> None:
    made = await payout(stripe_client)
    fake.clock.advance(4)
    await control.post(f"/payouts/{made.id}/return")
    returned = await stripe_client.v1.payouts.retrieve_async(made.id)
    assert (returned.status, returned.failure_code) == ("failed", "account_closed")


async def test_payouts_are_listed_newest_first_with_cursors(stripe_client, fake: CardCo) -> None:
    first = await payout(stripe_client, key="p1", reference="PO-1-a1")
    fake.clock.advance(1)
    second = await payout(stripe_client, key="p2", reference="PO-2-a1")
    page = await stripe_client.v1.payouts.list_async({"limit": 1})
    assert ([p.id for p in page.data], page.has_more) == ([second.id], True)
    rest = await stripe_client.v1.payouts.list_async({"limit": 1, "starting_after": second.id})
    assert ([p.id for p in rest.data], rest.has_more) == ([first.id], False)
    recent = await stripe_client.v1.payouts.list_async({"created": {"gte": second.created}})
    assert [p.id for p in recent.data] == [second.id]
