"""Shared helpers for the Stripe dialect's tests (docs/rehearsing-incidents.md "Stripe dialect")."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import respx
import stripe

from provider_fake import CardCo
from provider_fake.inprocess import mount
from provider_fake.stripe.api import PREFIX
from tests.provider_fake.support import CARDCO_URL, STRIPE_KEY, client_for

# The official client's httpx transport sends its form body as `data=<str>`, which httpx deprecates
# (it wants `content=`); the request is the same. Every Stripe test module sets `pytestmark` to this.
OFFICIAL_CLIENT_WARNINGS = pytest.mark.filterwarnings(
    "ignore:Use 'content=<...>' to upload raw bytes/text content.:DeprecationWarning"
)


@asynccontextmanager
async def official_client(fake: CardCo, key: str = STRIPE_KEY) -> AsyncIterator[stripe.StripeClient]:
    """The official `stripe` package, its API base at the fake's Stripe mount, served in-process
    (respx routes its httpx calls into the fake's ASGI app); no automatic retries."""
    with respx.mock(assert_all_called=False) as router:
        mount(router, fake, CARDCO_URL)
        http_client = stripe.HTTPXClient()
        yield stripe.StripeClient(key, base_addresses={"api": CARDCO_URL + PREFIX},
                                  http_client=http_client, max_network_retries=0)
        await http_client.close_async()


def intent_params(reference: str = "ORD-1-a1", method: str = "pm_card_visa", amount: int = 4250,
                  **extra: Any) -> dict[str, Any]:
    """What paygate's Stripe adapter sends: a confirmed PaymentIntent naming its client reference."""
    return {"amount": amount, "currency": "eur", "confirm": True, "payment_method": method,
            "metadata": {"client_reference": reference}, **extra}


async def create_intent(client: stripe.StripeClient, key: str | None = "key-1", **params: Any) -> stripe.PaymentIntent:
    options: dict[str, Any] = {"idempotency_key": key} if key else {}
    return await client.v1.payment_intents.create_async(intent_params(**params), options)  # type: ignore[arg-type]


def raw_client(fake: CardCo, key: str = STRIPE_KEY) -> httpx.AsyncClient:
    """A plain httpx client on the Stripe mount, for what the official client does not send."""
    return client_for(fake, key=key, base_url=CARDCO_URL + PREFIX)


def stripe_events(received: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Stripe deliveries the receiver got, as parsed Event payloads."""
    return [json.loads(r["body"]) for r in received if "stripe-signature" in r["headers"]]
