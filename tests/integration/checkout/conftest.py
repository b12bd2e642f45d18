"""A shop over the real gateway app: a merchant and a customer with tokens, CardCo in-process.

A shop pays on one provider account (``account``): CardCo's by default; the recovery matrix also
runs it on a Stripe account served by the same fake's Stripe dialect, so its helpers
name what differs per provider (payment-method names, request paths and headers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx

from gateway.services import Services
from provider_fake import CardCo
from tests.conftest import TEST_ACCOUNT

# CardCo's test payment methods and the fake's Stripe dialect's equivalents (docs/rehearsing-incidents.md).
STRIPE_METHODS = {"pm_card_declined": "pm_card_visa_chargeDeclined", "pm_card_3ds": "pm_card_threeDSecure2Required"}
# Where each provider's calls go on the fake: (create, lookup by id, lookup by reference, payment method).
PATHS = {"cardco": ("/v1/payments", "/v1/payments/{id}", "/v1/payments?client_reference={reference}",
                    "/v1/payment_methods/{method}"),
         "stripe": ("/stripe/v1/payment_intents", "/stripe/v1/payment_intents/{id}",
                    "/stripe/v1/payment_intents/search?query=metadata%5B%27client_reference%27%5D%3A%27{reference}%27",
                    "/stripe/v1/payment_methods/{method}")}
# The headers every send carries besides the credential and the key, per provider.
CONTEXT_HEADERS = {"cardco": ("cardco-account", "cardco-version"), "stripe": ("stripe-version",)}


@dataclass
class Shop:
    http: httpx.AsyncClient
    services: Services
    cardco: CardCo
    merchant: dict[str, str]
    customer: dict[str, str]
    customer_id: str = "cus_1"
    account: str = TEST_ACCOUNT  # the provider account orders pay on

    @property
    def provider(self) -> str:
        return self.account.split(":", 1)[0]

    def method(self, name: str) -> str:
        """The provider's test payment method for CardCo's ``name``."""
        return STRIPE_METHODS.get(name, name) if self.provider == "stripe" else name

    def path(self, which: int, **names: str) -> str:
        """0: the create path; 1: a lookup by ``id``; 2: a lookup by ``reference``; 3: a payment ``method``."""
        return PATHS[self.provider][which].format(**names)

    async def order(self, order_id: str = "ORD-5521", payment_method: str = "pm_card_visa",
                    amount_minor: int = 4250, account: str | None = None) -> dict[str, Any]:
        response = await self.http.post("/v1/orders", headers=self.merchant, json={
            "order_id": order_id, "customer_id": self.customer_id, "amount_minor": amount_minor,
            "currency": "EUR", "payment_method": self.method(payment_method),
            "provider_account": account or self.account})
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    async def pay(self, order_id: str = "ORD-5521") -> httpx.Response:
        return await self.http.post(f"/v1/orders/{order_id}/payment", headers=self.customer)

    async def status(self, order_id: str = "ORD-5521") -> httpx.Response:
        return await self.http.get(f"/v1/orders/{order_id}/payment/status", headers=self.customer)

    async def faults(self, *rules: dict[str, Any]) -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_control_app(self.cardco)),
                                     base_url="http://cardco.test") as control:
            response = await control.post("/_control/faults", json={"rules": list(rules)})
            assert response.status_code == 200, response.text

    async def authenticate(self, payment_id: str, client_secret: str | None = None,
                           result: str = "succeeded") -> httpx.Response:
        """The customer completes 3-D Secure (the fake's control API, so both dialects announce it),
        with Stripe.js's ``client_secret`` when given (the fake refuses one that is not the payment's)."""
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=_control_app(self.cardco)),
                                     base_url="http://cardco.test") as control:
            body = {"result": result} | ({} if client_secret is None else {"client_secret": client_secret})
            response = await control.post(f"/_control/payments/{payment_id}/authenticate", json=body)
            if client_secret is None:
                assert response.status_code == 200, response.text
            return response

    def provider_requests(self, path: str | None = None) -> list[dict[str, Any]]:
        """The fake's log of requests to ``path`` (default: the provider's create path)."""
        return [r for r in self.cardco.store.requests if r["path"] == (path or self.path(0))]

    def ledger(self) -> list[dict[str, Any]]:
        return [p.ledger_entry() for p in self.cardco.store.payments.values()]

    async def attempts(self, order_id: str = "ORD-5521") -> list[dict[str, Any]]:
        return await self.services.db.fetch_all(
            "SELECT * FROM payment_attempts WHERE order_id = %(o)s ORDER BY attempt_number", {"o": order_id})

    async def events(self, attempt_id: Any) -> list[str]:
        rows = await self.services.db.fetch_all(
            "SELECT kind FROM payment_attempt_events WHERE attempt_id = %(a)s ORDER BY event_id", {"a": attempt_id})
        return [row["kind"] for row in rows]

    async def outbox(self) -> list[str]:
        rows = await self.services.db.fetch_all("SELECT dedup_key FROM outbox_messages ORDER BY message_id")
        return [row["dedup_key"] for row in rows]


def _control_app(cardco: CardCo) -> Any:
    from provider_fake.app import create_app

    return create_app(cardco)


@pytest.fixture
async def shop(client: httpx.AsyncClient, services: Services, cardco: CardCo, cardco_http: respx.MockRouter) -> Shop:
    merchant = await services.tokens.create("merchant", "merchant_1")
    customer = await services.tokens.create("customer", "cus_1")
    return Shop(http=client, services=services, cardco=cardco,
                merchant={"Authorization": f"Bearer {merchant}"}, customer={"Authorization": f"Bearer {customer}"})
