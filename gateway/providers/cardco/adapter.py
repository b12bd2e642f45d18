"""CardCo, the bundled fictional provider, behind the seam (API.md, "provider_fake: CardCo";
"CardCo moves behind the seam unchanged").

JSON bodies; ``Authorization: Bearer``, ``CardCo-Account`` and ``CardCo-Version`` on every call.
Payments ``POST /v1/payments`` (lookups ``GET /v1/payments/{id}`` and ``?client_reference=``);
payouts ``POST /v1/payouts`` with ``expires_at`` = the attempt's send deadline; the recall extension
``POST /v1/payouts/{id}/recalls`` (docs/decisions/0015); the refund extension
``POST /v1/payments/{id}/refunds`` (docs/decisions/0021); lookups of those by client reference.
Every send of an attempt carries byte-identical parameters and its fixed idempotency key. The
classification is :mod:`answers` (payments) and the versioned :mod:`tables` (payouts, recalls,
refunds); notifications are Standard Webhooks (:mod:`signatures`) with CardCo's payload
(:mod:`notifications`), all pure modules of this package.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gateway.domain.attempt_kinds import PAYMENT, PAYMENT_REFUND, PAYOUT, PAYOUT_RECALL
from gateway.domain.effect_manifest import json_fields
from gateway.domain.provider_evidence import Lookup, Notification, Unreadable, retry_after_s
from gateway.domain.provider_listing import Page, PageRequest
from gateway.domain.provider_listing import Unreadable as ListingUnreadable
from gateway.domain.timestamps import rfc3339
from gateway.domain.webhook_verdicts import Rejected, Verified
from gateway.providers.base import LookupRecords, Operation, PaymentOperation, ProviderTimings, Request, Row
from gateway.providers.cardco import answers, listing, notifications, signatures
from gateway.providers.cardco.signatures import AccountKeys
from gateway.providers.cardco.tables import PAYOUT_TABLE, RECALL_TABLE, REFUND_TABLE
from gateway.settings import ProviderAccount

if TYPE_CHECKING:
    from gateway.providers.calls import ProviderCalls

PAYMENTS_PATH = "/v1/payments"
PAYMENT_METHODS_PATH = "/v1/payment_methods"
PAYOUTS_PATH = "/v1/payouts"
RECALLS_LOOKUP_PATH = "/v1/payout_recalls"
REFUNDS_LOOKUP_PATH = "/v1/refunds"


def _compact(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def payout_body(attempt: Row, token: str) -> bytes:
    """The payout attempt's parameters, serialized the same way for every send of the attempt."""
    return _compact({"amount_minor": attempt["amount_minor"], "currency": attempt["currency"],
                     "destination_token": token, "client_reference": attempt["client_reference"],
                     "expires_at": rfc3339(attempt["send_deadline"])})


def recall_body(attempt: Row) -> bytes:
    """A recall attempt's reference and its send deadline as ``expires_at``; its own key goes in the header."""
    return _compact({"client_reference": attempt["client_reference"], "expires_at": rfc3339(attempt["send_deadline"])})


def recall_path(provider_payout_id: str) -> str:
    """``POST /v1/payouts/{id}/recalls``: the provider payout being recalled is in the path."""
    return f"{PAYOUTS_PATH}/{provider_payout_id}/recalls"


def refund_path(provider_payment_id: str) -> str:
    """``POST /v1/payments/{id}/refunds``: the refunded provider payment is in the path."""
    return f"{PAYMENTS_PATH}/{provider_payment_id}/refunds"


def refund_body(attempt: Row) -> bytes:
    """The refund's own reference and its send deadline as ``expires_at``; the same bytes on every send."""
    return _compact({"client_reference": attempt["client_reference"], "expires_at": rfc3339(attempt["send_deadline"])})


def by_client_reference(path: str) -> LookupRecords:
    """``GET {path}?client_reference=<the attempt's reference>``: CardCo's records, each
    destination token replaced by its digest before anything else sees it."""
    async def lookup(calls: ProviderCalls, attempt: Row) -> list[Row] | None:
        document = await calls.get(path, {"client_reference": attempt["client_reference"]})
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            return None
        return [calls.without_token(record) for record in data if isinstance(record, dict)]
    return lookup


def _payout_request(attempt: Row, token: str | None) -> Request:
    if token is None:
        raise ValueError("a payout send needs its destination token")
    return Request(PAYOUTS_PATH, payout_body(attempt, token))


def payment_body(*, amount_minor: int, currency: str, payment_method: str, client_reference: str,
                 return_url: str | None = None) -> str:
    """Compact JSON, keys in a fixed order, a payment-method token and never card data. CardCo's
    challenge is always a redirect (its ``next_action.url``) and its API takes no return URL: the
    checkout page's own flow brings the customer back, so ``return_url`` is not sent."""
    return json.dumps({"amount_minor": amount_minor, "currency": currency, "payment_method": payment_method,
                       "client_reference": client_reference}, separators=(",", ":"))


def payment_method(request_body: str) -> str | None:
    try:
        method = json.loads(request_body)["payment_method"]
    except (ValueError, KeyError, TypeError):
        return None
    return method if isinstance(method, str) else None


def payment_lookup(*, provider_id: str | None, client_reference: str | None, account: ProviderAccount | None = None,
                   since: datetime | None = None) -> tuple[str, dict[str, str] | None]:
    """``GET /v1/payments/{id}``, else ``GET /v1/payments?client_reference=``."""
    if provider_id:
        return f"{PAYMENTS_PATH}/{provider_id}", None
    return PAYMENTS_PATH, {"client_reference": client_reference or ""}


def lookup_result(status_code: int, body: bytes, retry_after: str | None, *, listing: bool,
                  client_reference: str | None = None) -> Lookup:
    return answers.lookup_result(status_code, body, retry_after, listing=listing)


CHECKOUT = PaymentOperation(
    PAYMENTS_PATH, payment_body, lambda body: json_fields(body.encode("utf-8")), payment_method,
    answers.payment_evidence, payment_lookup, lookup_result,
    lambda method: f"{PAYMENT_METHODS_PATH}/{quote(method, safe='')}",
    lambda status_code, body, now: answers.payment_method_usable(status_code, body))  # CardCo says "expired" itself

OPERATIONS: dict[str, Operation | PaymentOperation] = {
    PAYMENT.name: CHECKOUT,
    PAYOUT.name: Operation(PAYOUT_TABLE, _payout_request, json_fields, by_client_reference(PAYOUTS_PATH)),
    PAYOUT_RECALL.name: Operation(
        RECALL_TABLE, lambda attempt, secret: Request(recall_path(attempt["provider_payout_id"]),
                                                             recall_body(attempt)),
        json_fields, by_client_reference(RECALLS_LOOKUP_PATH)),
    PAYMENT_REFUND.name: Operation(
        REFUND_TABLE, lambda attempt, secret: Request(refund_path(attempt["provider_payment_id"]),
                                                             refund_body(attempt)),
        json_fields, by_client_reference(REFUNDS_LOOKUP_PATH)),
}


class CardCo:
    """The CardCo adapter (gateway.providers.base.Provider)."""

    name = "cardco"
    # API.md: keys kept 24 h; lists "may lag behind writes by a configured visibility delay": the
    # lag is the CardCo deployment's, so the account states it (``visibility_delay_s``; the fake's
    # config of the same name), and CardCo documents none of its own; requests carry ``expires_at``,
    # which CardCo enforces with its skew (``request_expired``).
    timings = ProviderTimings(key_window_s=86_400, visibility_delay_s=0, request_expiry_enforced=True)
    operations = OPERATIONS

    def account_problem(self, account: ProviderAccount) -> str | None:
        # The settings' default api_version is CardCo's (API.md); CardCo has no connected accounts,
        # and its lookup by reference is its own listing.
        if account.stripe_account is not None:
            return "stripe_account is a Stripe Connect setting"
        return "payment_lookup is a Stripe setting" if account.payment_lookup != "search" else None

    def headers(self, account: ProviderAccount, credential: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {credential}", "CardCo-Account": account.id,
                "CardCo-Version": account.api_version, "Content-Type": "application/json"}

    def rate_limited(self, status_code: int, body: bytes) -> bool:
        return status_code == 429

    def retry_after_s(self, headers: Mapping[str, str]) -> float | None:
        return retry_after_s(headers.get("retry-after"))  # API.md: a 429 carries Retry-After

    def resend_allowed(self, headers: Mapping[str, str]) -> bool:
        return True  # CardCo documents no such advice: its classification table alone decides

    listed_kinds: tuple[str, ...] = ("payment", "payment_refund", "payout", "payout_recall")

    def list_request(self, kind: str, start: datetime, end: datetime, cursor: str | None) -> PageRequest:
        return listing.page_request(kind, start, end, cursor)

    def list_page(self, kind: str, status_code: int, body: bytes) -> Page | ListingUnreadable:
        return listing.read_page(kind, status_code, body)

    def verifier(self, account: ProviderAccount) -> AccountKeys:
        return AccountKeys.from_config(account.id, [s.get_secret_value() for s in account.webhook_secrets],
                                       account.webhook_public_keys)

    def verify(self, headers: Mapping[str, str], body: bytes, keys: Sequence[Any],
               now: datetime) -> Verified | Rejected:
        return signatures.verify(headers, body, keys, now)

    def parse(self, body: bytes) -> Notification | Unreadable:
        return notifications.parse(body)


CARDCO = CardCo()
