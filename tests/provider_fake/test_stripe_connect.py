"""Stripe Connect on the fake's Stripe dialect (Stripe's "Making API calls for connected accounts":
the platform's key with ``Stripe-Account: acct_...`` acts on that connected account): each connected
account has its own objects, idempotency keys, lists and searches, and its events, delivered to the
platform's (Connect) endpoint, carry ``account``; driven through the official ``stripe`` client's
``stripe_account`` request option."""

from __future__ import annotations

from typing import Any

import pytest
import stripe

from provider_fake import CardCo
from tests.provider_fake.stripe_support import OFFICIAL_CLIENT_WARNINGS, intent_params, raw_client
from tests.provider_fake.support import STRIPE_SECRET

pytestmark = OFFICIAL_CLIENT_WARNINGS
SHOP_A, SHOP_B = "acct_1ShopA", "acct_1ShopB"


async def create(client: stripe.StripeClient, connected: str | None, key: str = "k", **params: Any) -> stripe.PaymentIntent:
    options: dict[str, Any] = {"idempotency_key": key, **({"stripe_account": connected} if connected else {})}
    return await client.v1.payment_intents.create_async(intent_params(**params), options)  # type: ignore[arg-type]


async def test_each_connected_account_has_its_own_objects_and_keys(stripe_client: stripe.StripeClient) -> None:
    a = await create(stripe_client, SHOP_A)
    b = await create(stripe_client, SHOP_B)  # the same key on another account: another request
    platform = await create(stripe_client, None)
    assert len({a.id, b.id, platform.id}) == 3
    assert a.last_response.headers.get("idempotent-replayed") is None
    assert (await create(stripe_client, SHOP_A)).id == a.id  # the same key on the same account: replayed
    found = await stripe_client.v1.payment_intents.retrieve_async(a.id, options={"stripe_account": SHOP_A})
    assert found.id == a.id
    for elsewhere in (SHOP_B, None):
        with pytest.raises(stripe.InvalidRequestError) as missing:
            await stripe_client.v1.payment_intents.retrieve_async(
                a.id, options={"stripe_account": elsewhere} if elsewhere else {})
        assert missing.value.http_status == 404
    listed = await stripe_client.v1.payment_intents.list_async(options={"stripe_account": SHOP_B})
    assert [intent.id for intent in listed.data] == [b.id]


async def test_a_connected_accounts_event_names_it_and_a_platform_event_does_not(
        stripe_client: stripe.StripeClient, fake: CardCo, receiver) -> None:
    a = await create(stripe_client, SHOP_A, key="ka")
    platform = await create(stripe_client, None, key="kp")
    await fake.deliver_pending()
    events = {event.data.object.id: event for event in (
        stripe.Webhook.construct_event(r["body"], r["headers"]["stripe-signature"], STRIPE_SECRET, tolerance=None)
        for r in receiver.received)}
    assert events[a.id].to_dict().get("account") == SHOP_A
    assert "account" not in events[platform.id].to_dict()


async def test_a_stripe_account_header_naming_no_account_is_refused(fake: CardCo) -> None:
    async with raw_client(fake) as client:
        response = await client.get("/v1/payment_intents/pi_x", headers={"Stripe-Account": "not-an-account"})
    assert response.status_code == 403 and response.json()["error"]["type"] == "invalid_request_error"
