"""A shop over the real gateway app: a merchant and a customer with tokens, CardCo in-process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx

from gateway.services import Services
from provider_fake import CardCo
from tests.conftest import TEST_ACCOUNT


@dataclass
class Shop:
    http: httpx.AsyncClient
    services: Services
    cardco: CardCo
    merchant: dict[str, str]
    customer: dict[str, str]
    customer_id: str = "cus_1"

    async def order(self, order_id: str = "ORD-5521", payment_method: str = "pm_card_visa",
                    amount_minor: int = 4250, account: str = TEST_ACCOUNT) -> dict[str, Any]:
        response = await self.http.post("/v1/orders", headers=self.merchant, json={
            "order_id": order_id, "customer_id": self.customer_id, "amount_minor": amount_minor,
            "currency": "EUR", "payment_method": payment_method, "provider_account": account})
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

    def provider_requests(self, path: str = "/v1/payments") -> list[dict[str, Any]]:
        return [r for r in self.cardco.store.requests if r["path"] == path]

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
