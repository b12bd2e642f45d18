"""Stripe as its API reference documents it, for tests (issue 16): signed webhook headers made the
way Stripe documents ("Check the webhook signatures": ``t=<unix>,v1=<hex HMAC-SHA256 of
"{t}.{body}" keyed with the endpoint secret>``), and response bodies shaped exactly like Stripe's
PaymentIntent, Payout, Refund, Charge, Event, list, search-result and error objects (only the
fields paygate reads, plus the ones Stripe always sends)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

STRIPE_ACCOUNT = "stripe:acct_store:test"
STRIPE_URL = "http://stripe.test"
STRIPE_SECRET = "whsec_test_secret_0123456789abcdef"
STRIPE_API_VERSION = "2025-09-30.clover"


def stripe_signature(body: bytes, timestamp: int, *secrets: str) -> str:
    """``Stripe-Signature`` with one ``v1`` entry per secret (Stripe signs with each active secret
    while one is being rolled)."""
    entries = [hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
               for secret in secrets or (STRIPE_SECRET,)]
    return ",".join([f"t={timestamp}", *(f"v1={entry}" for entry in entries)])


def payment_intent(status: str = "succeeded", *, id: str = "pi_3Q0abc", amount: int = 4250, currency: str = "eur",
                   client_reference: str | None = "ORD-5521-a1", **fields: Any) -> dict[str, Any]:
    return {"id": id, "object": "payment_intent", "amount": amount, "amount_received": amount if status == "succeeded"
            else 0, "capture_method": "automatic_async", "client_secret": f"{id}_secret_x", "confirmation_method":
            "automatic", "created": 1764600000, "currency": currency, "last_payment_error": None, "livemode": False,
            "metadata": {} if client_reference is None else {"client_reference": client_reference},
            "next_action": None, "payment_method": "pm_1Q0card", "status": status, **fields}


def requires_action(**fields: Any) -> dict[str, Any]:
    return payment_intent("requires_action", next_action={
        "type": "use_stripe_sdk", "use_stripe_sdk": {"type": "three_d_secure_redirect", "stripe_js": "https://x"}},
        **fields)


def declined_intent(**fields: Any) -> dict[str, Any]:
    return payment_intent("requires_payment_method", last_payment_error={
        "type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds",
        "message": "Your card has insufficient funds."}, **fields)


def error(kind: str, code: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"error": {"type": kind, "message": f"{kind} {code or ''}".strip(),
                      **({"code": code} if code else {}), **fields}}


def card_declined() -> dict[str, Any]:
    return error("card_error", "card_declined", decline_code="insufficient_funds", payment_intent=declined_intent())


def listing(*items: dict[str, Any], url: str = "/v1/payouts", has_more: bool = False) -> dict[str, Any]:
    return {"object": "list", "data": list(items), "has_more": has_more, "url": url}


def search_result(*items: dict[str, Any]) -> dict[str, Any]:
    return {"object": "search_result", "data": list(items), "has_more": False, "next_page": None,
            "url": "/v1/payment_intents/search"}


def payout(status: str = "paid", *, id: str = "po_1Q0abc", amount: int = 425000, currency: str = "eur",
           client_reference: str = "PAY-3107-a1", destination: str = "ba_1Q0dest", **fields: Any) -> dict[str, Any]:
    return {"id": id, "object": "payout", "amount": amount, "arrival_date": 1764633600, "automatic": False,
            "created": 1764600000, "currency": currency, "destination": destination, "failure_code": None,
            "failure_message": None, "livemode": False, "metadata": {"client_reference": client_reference},
            "method": "standard", "status": status, "type": "bank_account", **fields}


def refund(status: str = "succeeded", *, id: str = "re_1Q0abc", amount: int = 4250, currency: str = "eur",
           client_reference: str = "ORD-5521-r1", payment_intent: str = "pi_3Q0abc", **fields: Any) -> dict[str, Any]:
    return {"id": id, "object": "refund", "amount": amount, "charge": "ch_3Q0abc", "created": 1764600000,
            "currency": currency, "metadata": {"client_reference": client_reference},
            "payment_intent": payment_intent, "reason": None, "status": status, **fields}


def charge_refunded(*refunds: dict[str, Any], amount: int = 4250, refunded: bool = True) -> dict[str, Any]:
    return {"id": "ch_3Q0abc", "object": "charge", "amount": amount, "amount_refunded": amount if refunded else 100,
            "currency": "eur", "metadata": {}, "payment_intent": "pi_3Q0abc", "refunded": refunded,
            "status": "succeeded", "refunds": listing(*refunds, url="/v1/charges/ch_3Q0abc/refunds")}


def event(event_type: str, subject: dict[str, Any], *, id: str = "evt_1Q0abc") -> bytes:
    return json.dumps({"id": id, "object": "event", "api_version": STRIPE_API_VERSION, "created": 1764600005,
                       "data": {"object": subject}, "livemode": False, "pending_webhooks": 1,
                       "request": {"id": "req_1", "idempotency_key": "k"}, "type": event_type}).encode()
