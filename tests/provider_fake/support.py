"""Shared test data and helpers for CardCo's tests."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from starlette.types import Receive, Scope, Send

from provider_fake import Account, CardCo, CardCoConfig
from provider_fake.app import create_app
from provider_fake.inprocess import CardCoTransport

START = datetime(2026, 11, 29, 16, 0, 0, tzinfo=UTC)
TEST_ACCOUNT = "cardco:acct_store:test"
LIVE_ACCOUNT = "cardco:acct_store:live"
TEST_KEY = "ck_test_k1"
LIVE_KEY = "ck_live_k1"
SECRET = "whsec_" + base64.b64encode(b"test-account-secret-0001").decode()
SEED = base64.b64encode(bytes(range(32))).decode()
CARDCO_URL = "http://cardco.test"
RECEIVER_URL = "http://receiver.test/hooks"
STRIPE_ACCOUNT = "stripe:acct_store:test"
STRIPE_KEY = "sk_test_k1"
STRIPE_SECRET = "whsec_stripe_test_secret_0001"


@dataclass
class Receiver:
    """A webhook receiver ASGI app that answers `fail_status` to its first `fail_first` posts."""

    fail_first: int = 0
    fail_status: int = 503
    received: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.received.append({"headers": headers, "body": body, "path": scope["path"]})
        status = self.fail_status if len(self.received) <= self.fail_first else 204
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def payloads(self) -> list[dict[str, Any]]:
        return [json.loads(r["body"]) for r in self.received]


def make_config(**settings: Any) -> CardCoConfig:
    accounts = [
        Account(id=TEST_ACCOUNT, api_key=TEST_KEY, webhook_url=RECEIVER_URL, webhook_secrets=[SECRET]),
        Account(id=LIVE_ACCOUNT, api_key=LIVE_KEY, webhook_url=None, webhook_secrets=[SECRET]),
        Account(id=STRIPE_ACCOUNT, api_key=STRIPE_KEY, dialect="stripe", webhook_url=RECEIVER_URL,
                webhook_secrets=[STRIPE_SECRET]),
    ]
    return CardCoConfig(accounts=accounts, **settings)


def client_for(
    fake: CardCo, account: str = TEST_ACCOUNT, key: str = TEST_KEY, base_url: str = CARDCO_URL
) -> httpx.AsyncClient:
    """An httpx client served in-process by `fake`'s app."""
    return httpx.AsyncClient(
        transport=CardCoTransport(create_app(fake)),
        base_url=base_url,
        headers={"Authorization": f"Bearer {key}", "CardCo-Account": account},
    )


def payout_body(
    reference: str = "PO-1-a1", expires_at: datetime = START, amount: int = 10000
) -> dict[str, Any]:
    return {
        "amount_minor": amount,
        "currency": "EUR",
        "destination_token": "dst_tok_1",
        "client_reference": reference,
        "expires_at": expires_at.isoformat().replace("+00:00", "Z"),
    }


async def send_payout(client: httpx.AsyncClient, key: str = "payout-1", **body: Any) -> httpx.Response:
    return await client.post("/v1/payouts", json=payout_body(**body), headers={"Idempotency-Key": key})


async def set_faults(control: httpx.AsyncClient, *rules: dict[str, Any]) -> None:
    response = await control.post("/faults", json={"rules": list(rules)})
    response.raise_for_status()


def payment_body(
    reference: str = "ORD-1-a1", method: str = "pm_card_visa", amount: int = 4250
) -> dict[str, Any]:
    return {
        "amount_minor": amount,
        "currency": "EUR",
        "payment_method": method,
        "client_reference": reference,
    }


async def pay(client: httpx.AsyncClient, key: str = "key-1", **body: Any) -> httpx.Response:
    return await client.post("/v1/payments", json=payment_body(**body), headers={"Idempotency-Key": key})
