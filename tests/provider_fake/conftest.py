"""Fixtures for CardCo's own tests: a fake on a frozen clock, an in-process client, a receiver.

No database or broker: CardCo is standalone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import stripe

from provider_fake import CardCo, Clock
from tests.provider_fake.stripe_support import official_client
from tests.provider_fake.support import CARDCO_URL, START, Receiver, client_for, make_config


@pytest.fixture
def clock() -> Clock:
    return Clock(base=lambda: START)


@pytest.fixture
def receiver() -> Receiver:
    return Receiver()


@pytest.fixture
async def receiver_client(receiver: Receiver) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=receiver)) as client:
        yield client


@pytest.fixture
def timings() -> dict[str, Any]:
    """CardCoConfig timing overrides; a test module or test overrides this fixture."""
    return {}


@pytest.fixture
def fake(clock: Clock, receiver_client: httpx.AsyncClient, timings: dict[str, Any]) -> CardCo:
    return CardCo(make_config(**timings), clock=clock, http_client=receiver_client)


@pytest.fixture
async def client(fake: CardCo) -> AsyncIterator[httpx.AsyncClient]:
    """Authenticated as the test account."""
    async with client_for(fake) as client:
        yield client


@pytest.fixture
async def control(fake: CardCo) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(fake, base_url=CARDCO_URL + "/_control") as client:
        yield client


@pytest.fixture
async def stripe_client(fake: CardCo) -> AsyncIterator[stripe.StripeClient]:
    """The official `stripe` client on the fake's Stripe mount (stripe_support.official_client)."""
    async with official_client(fake) as client:
        yield client
