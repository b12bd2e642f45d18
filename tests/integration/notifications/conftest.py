"""Notifications over the real gateway app and database: attempts created through the real
repository, notifications signed with the accounts' real secrets and posted to
``POST /v1/webhooks/{endpoint_id}``; CardCo itself delivers into the app for the end-to-end cases.

``webhooks`` serves the ``provider`` fixture's accounts (tests/integration/conftest.py).
On CardCo a notification is CardCo's ``payment.*`` event signed with its ``webhook-signature``
scheme; on Stripe the same notification is the Stripe Event a Stripe account sends
(``payment_intent.*`` or ``charge.refunded`` about a PaymentIntent, ``metadata[client_reference]``,
lower-case currency) signed with ``Stripe-Signature`` under its ``whsec_`` secret."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
from tests.conftest import CARDCO_URL, LIVE_ACCOUNT, TEST_ACCOUNT, account_config, settings_with
from tests.stripe_support import (
    STRIPE_ACCOUNT,
    STRIPE_SECRET,
    charge_refunded,
    declined_intent,
    event_document,
    payment_intent,
    stripe_account,
    stripe_signature,
)

STRIPE_LIVE_ACCOUNT = "stripe:acct_store:live"
STRIPE_LIVE_SECRET = "whsec_live_secret_fedcba9876543210"
# Each provider's test and live account.
ACCOUNTS = {"cardco": (TEST_ACCOUNT, LIVE_ACCOUNT), "stripe": (STRIPE_ACCOUNT, STRIPE_LIVE_ACCOUNT)}
ENDPOINTS = {TEST_ACCOUNT: "cardco-test", LIVE_ACCOUNT: "cardco-live",
             STRIPE_ACCOUNT: "stripe-test", STRIPE_LIVE_ACCOUNT: "stripe-live"}
STRIPE_SECRETS = {STRIPE_ACCOUNT: STRIPE_SECRET, STRIPE_LIVE_ACCOUNT: STRIPE_LIVE_SECRET}
# The fake's Stripe dialect finds an account by its secret key alone: each has its own.
STRIPE_KEYS = {STRIPE_ACCOUNT: "sk_test_notifications", STRIPE_LIVE_ACCOUNT: "sk_live_notifications"}
# CardCo's payment event types as Stripe names them (a refund is the charge's ``charge.refunded``).
STRIPE_TYPES = {"payment.succeeded": "payment_intent.succeeded", "payment.processing": "payment_intent.processing",
                "payment.requires_action": "payment_intent.requires_action",
                "payment.failed": "payment_intent.payment_failed", "payment.refunded": "charge.refunded"}
_ids = itertools.count(1)


def secret_of(account: str) -> str:
    if account in STRIPE_SECRETS:
        return STRIPE_SECRETS[account]
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


def named(provider: str, *types: str) -> list[str]:
    """CardCo's event ``types`` as ``provider`` names them."""
    return [STRIPE_TYPES[t] if provider == "stripe" else t for t in types]


def stripe_event(cardco: dict[str, Any]) -> dict[str, Any]:
    """The Stripe Event a Stripe account sends for what CardCo's ``payment_event`` describes: the
    PaymentIntent (or, refunded, its charge) with the same id, reference, amount, status and
    customer action; CardCo's ``sequence`` has no Stripe counterpart."""
    obj = cardco["data"]["object"]
    status = obj["status"]
    fields = {"id": obj["id"], "amount": obj["amount_minor"], "currency": obj["currency"].lower(),
              "client_reference": obj["client_reference"]}
    intent = declined_intent(**fields) if status == "failed" else payment_intent(
        "succeeded" if status == "refunded" else status, **fields)
    subject = intent
    if status == "requires_action":
        subject = {**intent, "next_action": {"type": "redirect_to_url", "redirect_to_url": {
            "url": obj["next_action"]["url"], "return_url": "https://shop.test/return"}}}
    elif status == "refunded":  # the PaymentIntent's charge, its metadata copied from the intent
        subject = {**charge_refunded(amount=intent["amount"]), "payment_intent": intent["id"],
                   "metadata": intent["metadata"]}
    document = event_document(STRIPE_TYPES[cardco["type"]], subject, id=cardco.get("id", ""))
    if "id" not in cardco:  # an unkeyed delivery, as CardCo's
        del document["id"]
    return document


@dataclass
class Webhooks:
    """Signs and posts notifications, and reads back what the gateway stored, on ``provider``'s
    test and live accounts."""

    http: httpx.AsyncClient
    services: Services
    clock: ManualClock
    provider: str = "cardco"

    @property
    def test_account(self) -> str:
        return ACCOUNTS[self.provider][0]

    @property
    def live_account(self) -> str:
        return ACCOUNTS[self.provider][1]

    def payment_event(self, attempt: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        """``payment_event`` as the provider sends it (on Stripe: its ``stripe_event``)."""
        cardco = payment_event(attempt, **fields)
        return cardco if self.provider == "cardco" else stripe_event(cardco)

    async def deliver(self, payload: dict[str, Any] | bytes, account: str | None = None, *,
                      secret: str | None = None, webhook_id: str | None = None,
                      endpoint: str | None = None, skew_s: int = 0) -> httpx.Response:
        """One delivery: a fresh signature on the clock's timestamp (on CardCo a fresh webhook-id),
        as a provider redelivers."""
        account = account or self.test_account
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        timestamp = int(self.clock.now().timestamp()) + skew_s
        secret = secret or secret_of(account)
        headers = {"content-type": "application/json"}
        if account in STRIPE_SECRETS:
            headers["stripe-signature"] = stripe_signature(body, timestamp, secret)
        else:
            msg_id = webhook_id or f"msg_{uuid.uuid4().hex}"
            headers.update({"webhook-id": msg_id, "webhook-timestamp": str(timestamp),
                            "webhook-signature": sign_v1(secret, msg_id, timestamp, body)})
        return await self.http.post(f"/v1/webhooks/{endpoint or ENDPOINTS[account]}", content=body, headers=headers)

    async def attempt(self, order_id: str | None = None, *, account: str | None = None, amount_minor: int = 4250,
                      started: bool = True) -> dict[str, Any]:
        """A real attempt on ``account`` (the test account), Started through the repository (nothing is sent)."""
        order_id = order_id or f"ORD-{uuid.uuid4().hex[:8]}"
        await self.services.orders.create("merchant_1", {
            "order_id": order_id, "customer_id": "cus_1", "amount_minor": amount_minor, "currency": "EUR",
            "payment_method": "pm_card_visa", "provider_account": account or self.test_account})
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


@asynccontextmanager
async def another_process(settings: Settings, clock: ManualClock, provider: str = "cardco",
                          **overrides: Any) -> AsyncIterator[Webhooks]:
    """A second web process on the same database: its own services, so its own remembered keys,
    keys in flight and group commit (``overrides`` change its settings)."""
    services = await Services.open(settings.model_copy(update=overrides), clock)
    transport = httpx.ASGITransport(app=create_app(services.settings, services=services), raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway.test") as http:
            yield Webhooks(http=http, services=services, clock=clock, provider=provider)
    finally:
        await services.close()


@pytest.fixture
def settings(database_url: str, redis_url: str) -> Settings:
    """CardCo's test and live accounts, then a Stripe test and live account (their endpoints
    ``stripe-test`` and ``stripe-live``, their API the fake's Stripe mount)."""
    return settings_with(database_url, redis_url, [
        account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT),
        *(stripe_account(base_url=CARDCO_URL + "/stripe", api_key=STRIPE_KEYS[account], secret=secret,
                         endpoint=ENDPOINTS[account], id=account) for account, secret in STRIPE_SECRETS.items())])


@pytest.fixture
async def webhooks(client: httpx.AsyncClient, services: Services, clock: ManualClock, provider: str) -> Webhooks:
    return Webhooks(http=client, services=services, clock=clock, provider=provider)


@pytest.fixture
async def operator(services: Services) -> dict[str, str]:
    token = await services.tokens.create("operator", "ops_1")
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def cardco(settings: Settings, services: Services, clock: ManualClock,
                 stripe_event_version: str) -> AsyncIterator[CardCo]:
    """CardCo whose webhooks go, signed, into the real gateway app (in-process ASGI): CardCo's
    accounts, and the Stripe ones in the fake's Stripe dialect (``Stripe-Signature``d Events)."""
    gateway = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(settings, services=services)))
    accounts = [Account(id=account, api_key=STRIPE_KEYS.get(account) or str(account_config(account)["api_key"]),
                        dialect="stripe" if account in STRIPE_KEYS else "cardco", webhook_secrets=[secret_of(account)],
                        webhook_url=f"http://gateway.test/v1/webhooks/{endpoint}",
                        **({"api_version": stripe_event_version} if account in STRIPE_KEYS else {}))
                for account, endpoint in ENDPOINTS.items()]
    async with gateway:
        yield CardCo(CardCoConfig(accounts=accounts), clock=CardCoClock(base=clock.now), http_client=gateway)
