"""Stripe as its API reference documents it, for tests: signed webhook headers made the
way Stripe documents ("Check the webhook signatures": ``t=<unix>,v1=<hex HMAC-SHA256 of
"{t}.{body}" keyed with the endpoint secret>``), and response bodies shaped exactly like Stripe's
PaymentIntent, Payout, Refund, Charge, Event, list, search-result and error objects (only the
fields paygate reads, plus the ones Stripe always sends)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any
from urllib.parse import parse_qsl

import httpx

STRIPE_ACCOUNT = "stripe:acct_store:test"
STRIPE_URL = "http://stripe.test"
STRIPE_SECRET = "whsec_test_secret_0123456789abcdef"
STRIPE_API_VERSION = "2025-09-30.clover"


def stripe_account(base_url: str = STRIPE_URL, api_key: str = "sk_test_51Qstripe", secret: str = STRIPE_SECRET,
                   endpoint: str = "stripe-test", id: str = STRIPE_ACCOUNT) -> dict[str, object]:
    """A Stripe account's gateway configuration (the test account unless ``id`` says otherwise)."""
    return {"id": id, "base_url": base_url, "api_key": api_key, "api_version": STRIPE_API_VERSION,
            "webhook_endpoint_id": endpoint, "webhook_secrets": [secret]}


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


def event_document(event_type: str, subject: dict[str, Any], *, id: str = "evt_1Q0abc") -> dict[str, Any]:
    return {"id": id, "object": "event", "api_version": STRIPE_API_VERSION, "created": 1764600005,
            "data": {"object": subject}, "livemode": False, "pending_webhooks": 1,
            "request": {"id": "req_1", "idempotency_key": "k"}, "type": event_type}


def event(event_type: str, subject: dict[str, Any], *, id: str = "evt_1Q0abc") -> bytes:
    return json.dumps(event_document(event_type, subject, id=id)).encode()


class StripeApi:
    """Stripe's PaymentIntents API as its reference documents it, for respx ("the API
    through respx with response bodies shaped exactly as Stripe documents them, including errors,
    429s with Retry-After, and idempotency replays"):

    - ``POST /v1/payment_intents`` (form) saves the status and body of the first request under its
      ``Idempotency-Key``; a repeat with the same parameters gets the saved answer with
      ``Idempotent-Replayed: true``, one with other parameters a 400 ``idempotency_error``;
      ``pm_card_visa`` succeeds, ``pm_card_declined`` is a 402 decline, ``pm_card_3ds`` requires action;
    - ``POST /v1/payouts`` (pending) and ``POST /v1/refunds`` (succeeded, in full) under the same
      idempotency layer, listed by ``GET /v1/payouts`` and ``GET /v1/refunds?payment_intent=``;
    - ``GET /v1/payment_intents/{id}``, ``GET /v1/payment_intents/search`` (a new intent becomes
      searchable only ``visibility_s`` after it was created, on the test's clock), and
      ``GET /v1/payment_methods/{id}``;
    - ``script``: what the next create (of any object) does instead of answering: ``drop`` (created, the answer is
      lost), ``lost`` (never arrives), ``429`` (rate limited before the idempotency layer, with
      ``Retry-After``); ``lookups``: ``429`` for the next lookup.
    """

    def __init__(self, now: Any, visibility_s: float = 60.0) -> None:
        self.now = now
        self.visibility_s = visibility_s
        self.intents: dict[str, dict[str, Any]] = {}
        self.created_at: dict[str, Any] = {}
        self.saved: dict[str, tuple[dict[str, str], int, dict[str, Any]]] = {}
        self.requests: list[Any] = []
        self.payouts: dict[str, dict[str, Any]] = {}
        self.refunds: dict[str, dict[str, Any]] = {}
        self.script: list[str] = []
        self.lookups: list[str] = []

    def creates(self) -> list[Any]:
        return [r for r in self.requests if r.method == "POST"]

    def handle(self, request: Any) -> Any:
        self.requests.append(request)
        path = request.url.path
        if request.method == "POST":
            action = self.script.pop(0) if self.script else None
            if action == "lost":
                raise httpx.ReadTimeout("no answer", request=request)
            if action == "429":
                return httpx.Response(429, json=error("invalid_request_error", "rate_limit"),
                                      headers={"Retry-After": "2"})
            create = self._create if path == "/v1/payment_intents" else lambda params: self._object(path, params)
            return self._saved(request, create, action)
        if path in ("/v1/payouts", "/v1/refunds"):
            objects = self.payouts if path == "/v1/payouts" else self.refunds
            wanted = request.url.params.get("payment_intent")
            return httpx.Response(200, json=listing(*(o for o in objects.values()
                                                      if wanted in (None, o.get("payment_intent"))), url=path))
        if self.lookups and request.method == "GET" and path.startswith("/v1/payment_intents"):
            self.lookups.pop(0)
            return httpx.Response(429, json=error("invalid_request_error", "rate_limit"), headers={"Retry-After": "7"})
        if path == "/v1/payment_intents/search":
            query = request.url.params["query"]
            found = [intent for id, intent in self.intents.items()
                     if f"'{intent['metadata'].get('client_reference')}'" in query
                     and (self.now() - self.created_at[id]).total_seconds() >= self.visibility_s]
            return httpx.Response(200, json=search_result(*found))
        if path.startswith("/v1/payment_intents/"):
            intent = self.intents.get(path.rsplit("/", 1)[1])
            return httpx.Response(200, json=intent) if intent else httpx.Response(
                404, json=error("invalid_request_error", "resource_missing", param="intent"))
        if path.startswith("/v1/payment_methods/"):
            return httpx.Response(200, json={"id": path.rsplit("/", 1)[1], "object": "payment_method", "type": "card",
                                             "card": {"brand": "visa", "exp_month": 12, "exp_year": 2034}})
        return httpx.Response(404, json=error("invalid_request_error", "resource_missing"))

    def _saved(self, request: Any, create: Any, action: str | None = None) -> Any:
        """Stripe's idempotency layer: the first answer under a key is saved and replayed."""
        params = dict(parse_qsl(request.content.decode()))
        key = request.headers["idempotency-key"]
        if key in self.saved:
            saved_params, status, document = self.saved[key]
            if saved_params != params:
                return httpx.Response(400, json=error("idempotency_error"))
            return httpx.Response(status, json=document, headers={"Idempotent-Replayed": "true"})
        status, document = create(params)
        self.saved[key] = (params, status, document)
        if action == "drop":
            raise httpx.ReadTimeout("the answer was lost", request=request)
        return httpx.Response(status, json=document, headers={"Request-Id": f"req_{len(self.requests)}"})

    def _object(self, path: str, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """A payout (pending) or a full refund (succeeded) as Stripe creates them."""
        reference = params.get("metadata[client_reference]", "")
        if path == "/v1/payouts":
            id = f"po_{len(self.payouts) + 1:04d}"
            self.payouts[id] = payout("pending", id=id, amount=int(params["amount"]), currency=params["currency"],
                                      client_reference=reference, destination=params["destination"])
            return 200, self.payouts[id]
        intent = self.intents.get(params["payment_intent"], {})
        id = f"re_{len(self.refunds) + 1:04d}"
        self.refunds[id] = refund("succeeded", id=id, amount=intent.get("amount", 0),
                                  currency=intent.get("currency", "eur"), client_reference=reference,
                                  payment_intent=params["payment_intent"])
        return 200, self.refunds[id]

    def _create(self, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        id = f"pi_{len(self.intents) + 1:04d}"
        fields = {"id": id, "amount": int(params["amount"]), "currency": params["currency"],
                  "client_reference": params.get("metadata[client_reference]")}
        method = params.get("payment_method")
        intent = declined_intent(**fields) if method == "pm_card_declined" else requires_action(**fields) \
            if method == "pm_card_3ds" else payment_intent("succeeded", **fields)
        self.intents[id], self.created_at[id] = intent, self.now()
        if method == "pm_card_declined":
            return 402, error("card_error", "card_declined", decline_code="insufficient_funds", payment_intent=intent)
        return 200, intent
