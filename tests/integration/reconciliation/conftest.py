"""Provider-side reconciliation runs over the checkout shop, on both dialects of the real fake
(the recovery suite's accounts: CardCo's test account and a Stripe-dialect one), the real
database, and objects made at the provider directly, behind the gateway's back."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from gateway.reconciliation.runs import Runs
from provider_fake.app import create_app
from tests.conftest import TEST_ACCOUNT, account_config
from tests.integration.checkout.conftest import Shop
from tests.integration.recovery.conftest import STRIPE_KEY, cardco, settings  # noqa: F401  (both dialects' accounts)
from tests.integration.test_jobs import jobs_runtime  # noqa: F401  (the real broker, shared with the job tests)
from tests.stripe_support import STRIPE_ACCOUNT

__all__ = ["cardco", "settings"]
CARDCO_KEY = str(account_config(TEST_ACCOUNT)["api_key"])


@pytest.fixture
def runs(shop: Shop) -> Runs:
    services = shop.services
    return Runs(services.db, services.clock, services.settings, services.http)


class Provider:
    """The provider's own API and control API, in the shop account's dialect: what a dashboard
    user or another integration does there, which paygate never sent."""

    def __init__(self, shop: Shop) -> None:
        self.shop = shop
        self.stripe = shop.account == STRIPE_ACCOUNT
        self._transport = httpx.ASGITransport(app=create_app(shop.cardco))

    def _client(self) -> httpx.AsyncClient:
        headers = ({"Authorization": f"Bearer {STRIPE_KEY}"} if self.stripe
                   else {"Authorization": f"Bearer {CARDCO_KEY}", "CardCo-Account": TEST_ACCOUNT})
        return httpx.AsyncClient(transport=self._transport, base_url="http://cardco.test", headers=headers)

    async def payment(self, reference: str, amount_minor: int = 4250, key: str | None = None) -> str:
        async with self._client() as client:
            if self.stripe:
                response = await client.post("/stripe/v1/payment_intents", headers={"Idempotency-Key": key or reference},
                                             data={"amount": str(amount_minor), "currency": "eur", "confirm": "true",
                                                   "payment_method": "pm_card_visa",
                                                   "metadata[client_reference]": reference})
            else:
                response = await client.post("/v1/payments", headers={"Idempotency-Key": key or reference}, json={
                    "amount_minor": amount_minor, "currency": "EUR", "payment_method": "pm_card_visa",
                    "client_reference": reference})
        assert response.status_code == 200, response.text
        return str(response.json()["id"])

    async def payout(self, reference: str, expires_at: datetime, amount_minor: int = 10000) -> str:
        async with self._client() as client:
            if self.stripe:
                response = await client.post("/stripe/v1/payouts", headers={"Idempotency-Key": reference}, data={
                    "amount": str(amount_minor), "currency": "eur", "destination": "ba_outside",
                    "metadata[client_reference]": reference})
            else:
                response = await client.post("/v1/payouts", headers={"Idempotency-Key": reference}, json={
                    "amount_minor": amount_minor, "currency": "EUR", "destination_token": "dst_outside",
                    "client_reference": reference, "expires_at": expires_at.isoformat()})
        assert response.status_code == 200, response.text
        return str(response.json()["id"])

    async def control(self, path: str, body: dict[str, Any] | None = None) -> None:
        async with httpx.AsyncClient(transport=self._transport, base_url="http://cardco.test") as client:
            response = await client.post(f"/_control{path}", json=body or {})
        assert response.status_code == 200, response.text


@pytest.fixture
def provider_api(shop: Shop) -> Provider:
    return Provider(shop)


def window(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """Whole seconds around the moments (Stripe's `created` has no finer grain)."""
    return (start.replace(microsecond=0) - timedelta(seconds=1), end.replace(microsecond=0) + timedelta(seconds=1))
