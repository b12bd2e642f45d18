"""Stripe's webhooks: Event objects signed with `Stripe-Signature`.

docs/rehearsing-incidents.md "Stripe dialect": the body is an Event (`id` evt_..., `object`
"event", `type`, `data.object`, `created` in unix seconds, `api_version` the account's,
`livemode`, `pending_webhooks`, `request`); the header is `t=<unix seconds>,v1=<hex HMAC-SHA256
of "{t}.{raw body}">`, one `v1=` per endpoint secret, so a receiver keeps verifying while secrets
rotate. The secret's UTF-8 bytes are the HMAC key, as the official `stripe` package computes it.
Queueing, retries, duplicates, reordering and redelivery are the shared ones (webhooks.py).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from provider_fake.config import Account
from provider_fake.webhooks import Event


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of `{timestamp}.{body}` keyed with the secret."""
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signature_header(secrets_: list[str], timestamp: int, body: bytes) -> str:
    """`Stripe-Signature`: the timestamp, then one `v1=` per secret."""
    return ",".join([f"t={timestamp}", *(f"v1={signature(secret, timestamp, body)}" for secret in secrets_)])


class StripeEvents:
    """The Stripe dialect's `WebhookFormat`."""

    amount_field = "amount"

    def payload(self, event: Event, account: Account | None) -> dict[str, Any]:
        return {
            "id": event.id,
            "object": "event",
            "api_version": account.api_version if account else None,
            "created": int(event.created.timestamp()),
            "data": {"object": event.object},
            "livemode": account.livemode if account else False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "type": event.type,
            # Stripe Connect: an event of a connected account names it (a Connect endpoint's events).
            **({"account": account.connected_account} if account and account.connected_account else {}),
        }

    def headers(self, account: Account, body: bytes, timestamp: int, forged: bool) -> dict[str, str]:
        keys = account.webhook_secrets
        if forged:
            keys = ["whsec_" + secrets.token_hex(16) for _ in keys]
        return {
            "content-type": "application/json; charset=utf-8",
            "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
            "stripe-signature": signature_header(keys, timestamp, body),
        }
