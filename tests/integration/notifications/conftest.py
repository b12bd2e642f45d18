"""Notifications over the real gateway app and database: attempts created through the real
repository, notifications signed with the accounts' real secrets (the CardCo signer) and posted to
``POST /v1/webhooks/{endpoint_id}``; CardCo itself delivers into the app for the end-to-end cases."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.services import Services
from gateway.settings import Settings
from provider_fake import CardCo, CardCoConfig
from provider_fake import Clock as CardCoClock
from provider_fake.config import Account
from provider_fake.signing import sign_v1
from tests.conftest import LIVE_ACCOUNT, TEST_ACCOUNT, account_config
from tests.integration.checkout.conftest import shop  # noqa: F401  (the checkout suite's Shop, over this CardCo)

ENDPOINTS = {TEST_ACCOUNT: "cardco-test", LIVE_ACCOUNT: "cardco-live"}
_ids = itertools.count(1)


def secret_of(account: str) -> str:
    return str(account_config(account)["webhook_secrets"][0])  # type: ignore[index]


def payment_event(attempt: dict[str, Any] | None = None, *, type_: str = "payment.succeeded", event_id: str | None = "auto",
                  **object_fields: Any) -> dict[str, Any]:
    """A CardCo payload about ``attempt`` (its reference, amount and currency), overridable."""
    status = type_.split(".", 1)[1]
    obj: dict[str, Any] = {"object": "payment", "id": f"pay_{uuid.uuid4().hex[:12]}",
                           "client_reference": attempt["client_reference"] if attempt else "ORD-none-a1",
                           "amount_minor": attempt["amount_minor"] if attempt else 4250,
                           "currency": attempt["currency"] if attempt else "EUR", "status": status,
                           "failure_code": "card_declined" if status == "failed" else None,
                           "next_action": None, "sequence": 2}
    obj.update(object_fields)
    payload: dict[str, Any] = {"type": type_, "created": "2026-11-29T16:00:05Z", "data": {"object": obj}}
    if event_id is not None:
        payload["id"] = f"evt_{next(_ids):06d}" if event_id == "auto" else event_id
    return payload


@dataclass
class Webhooks:
    """Signs and posts notifications, and reads back what the gateway stored."""

    http: httpx.AsyncClient
    services: Services
    clock: ManualClock

    async def deliver(self, payload: dict[str, Any] | bytes, account: str = TEST_ACCOUNT, *,
                      secret: str | None = None, webhook_id: str | None = None,
                      endpoint: str | None = None, skew_s: int = 0) -> httpx.Response:
        """One delivery: a fresh webhook-id and the clock's timestamp, as a provider redelivers."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        msg_id = webhook_id or f"msg_{uuid.uuid4().hex}"
        timestamp = int(self.clock.now().timestamp()) + skew_s
        return await self.http.post(f"/v1/webhooks/{endpoint or ENDPOINTS[account]}", content=body, headers={
            "content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": sign_v1(secret or secret_of(account), msg_id, timestamp, body)})

    async def attempt(self, order_id: str | None = None, *, account: str = TEST_ACCOUNT, amount_minor: int = 4250,
                      started: bool = True) -> dict[str, Any]:
        """A real attempt, Started through the repository (nothing is sent)."""
        order_id = order_id or f"ORD-{uuid.uuid4().hex[:8]}"
        await self.services.orders.create("merchant_1", {
            "order_id": order_id, "customer_id": "cus_1", "amount_minor": amount_minor, "currency": "EUR",
            "payment_method": "pm_card_visa", "provider_account": account})
        attempt = await self.services.attempts.get_or_create_live(order_id, "cus_1")
        if started:
            attempt = await self.services.attempts.mark_started(attempt) or attempt
        return attempt

    async def reload(self, attempt: dict[str, Any]) -> dict[str, Any]:
        return await self.services.attempts.get(attempt["attempt_id"])

    async def set_unknown(self, attempt: dict[str, Any]) -> dict[str, Any]:
        return await self.services.db.fetch_one(
            "UPDATE payment_attempts SET state = 'Unknown', version = version + 1 WHERE attempt_id = %(a)s RETURNING *",
            {"a": attempt["attempt_id"]}) or {}

    async def notifications(self) -> list[dict[str, Any]]:
        return await self.services.db.fetch_all(
            "SELECT event_id, attempt_id, provider_account, notification_key, detail FROM payment_attempt_events"
            " WHERE kind = 'notification' ORDER BY event_id")

    async def transitions(self, attempt: dict[str, Any]) -> list[str]:
        rows = await self.services.db.fetch_all(
            "SELECT detail FROM payment_attempt_events WHERE attempt_id = %(a)s AND kind = 'transition'"
            " ORDER BY event_id", {"a": attempt["attempt_id"]})
        return [row["detail"]["to"] for row in rows]

    async def outbox(self, kind: str | None = None) -> list[str]:
        rows = await self.services.db.fetch_all(
            "SELECT dedup_key FROM outbox_messages WHERE %(k)s::text IS NULL OR kind = %(k)s ORDER BY message_id",
            {"k": kind})
        return [row["dedup_key"] for row in rows]

    async def escalations(self) -> list[dict[str, Any]]:
        return await self.services.db.fetch_all(
            "SELECT escalation_id, escalation_key, reason, attempt_id, details, resolved_at"
            " FROM payment_escalations ORDER BY escalation_id")


@pytest.fixture
async def webhooks(client: httpx.AsyncClient, services: Services, clock: ManualClock) -> Webhooks:
    return Webhooks(http=client, services=services, clock=clock)


@pytest.fixture
async def operator(services: Services) -> dict[str, str]:
    token = await services.tokens.create("operator", "ops_1")
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def cardco(settings: Settings, services: Services, clock: ManualClock) -> AsyncIterator[CardCo]:
    """CardCo whose webhooks go, signed, into the real gateway app (in-process ASGI)."""
    gateway = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(settings, services=services)))
    accounts = [Account(id=account, api_key=str(account_config(account)["api_key"]), webhook_secrets=[secret_of(account)],
                        webhook_url=f"http://gateway.test/v1/webhooks/{ENDPOINTS[account]}")
                for account in (TEST_ACCOUNT, LIVE_ACCOUNT)]
    async with gateway:
        yield CardCo(CardCoConfig(accounts=accounts), clock=CardCoClock(base=clock.now), http_client=gateway)
