"""Stripe behind the seam (docs/decisions/0046, 0047; the pure rules are this package's
:mod:`answers`, :mod:`tables`, :mod:`notifications` and :mod:`signatures`).

Every call carries ``Authorization: Bearer <secret key>`` and the account's pinned
``Stripe-Version``; a create carries the attempt's key as ``Idempotency-Key`` and a form-encoded
body, the same bytes on every send. Checkout payments are PaymentIntents created with
``confirm=true`` (``POST /v1/payment_intents``), looked up by id or through the Search API by
``metadata['client_reference']``; payouts ``POST /v1/payouts`` (looked up in the list of payouts
created since the claim, by metadata); refunds ``POST /v1/refunds`` for the paid PaymentIntent
(looked up in the list of its refunds, by metadata). A payout recall has no Stripe equivalent that
paygate can use (docs/decisions/0047): the operation is unsupported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gateway.domain.attempt_kinds import PAYMENT, PAYMENT_REFUND, PAYOUT
from gateway.domain.provider_evidence import Lookup, Notification, Unreadable
from gateway.domain.provider_listing import Page, PageRequest
from gateway.domain.provider_listing import Unreadable as ListingUnreadable
from gateway.domain.webhook_verdicts import Rejected, Verified
from gateway.providers.base import Operation, PaymentOperation, ProviderTimings, Request, Row
from gateway.providers.stripe import answers as stripe
from gateway.providers.stripe import listing, notifications, signatures, versions
from gateway.providers.stripe.signatures import EndpointSecrets
from gateway.providers.stripe.tables import PAYOUT_TABLE, REFUND_TABLE
from gateway.settings import ProviderAccount

if TYPE_CHECKING:
    from gateway.providers.calls import ProviderCalls

PAYMENT_INTENTS_PATH = "/v1/payment_intents"
PAYMENT_METHODS_PATH = "/v1/payment_methods"
PAYOUTS_PATH = "/v1/payouts"
REFUNDS_PATH = "/v1/refunds"
PAGE = "100"  # Stripe's largest list page
# How far before its claim a payout may have been created on Stripe's clock (the hosts' skew).
CREATED_SLACK = timedelta(minutes=5)


def payout_body(attempt: Row, token: str) -> bytes:
    """``POST /v1/payouts``: amount, currency, the destination (its token, never stored) and the reference."""
    return stripe.form([("amount", str(attempt["amount_minor"])), ("currency", attempt["currency"].lower()),
                        ("destination", token), (stripe.CLIENT_REFERENCE, attempt["client_reference"])]).encode()


def refund_body(attempt: Row) -> bytes:
    """``POST /v1/refunds``: the paid PaymentIntent refunded in full, with the refund's own reference."""
    return stripe.form([("payment_intent", attempt["provider_payment_id"]),
                        (stripe.CLIENT_REFERENCE, attempt["client_reference"])]).encode()


def _payout_request(attempt: Row, token: str | None) -> Request:
    if token is None:
        raise ValueError("a payout send needs its destination token")
    return Request(PAYOUTS_PATH, payout_body(attempt, token))


def _payout_fields(body: bytes) -> dict[str, Any]:
    # Stripe enforces no request expiry: the fields say so (docs/decisions/0047).
    return stripe.common_fields(body, destination_token="destination") | {"expires_at": None}


def _refund_fields(body: bytes) -> dict[str, Any]:
    return stripe.common_fields(body, provider_payment_id="payment_intent") | {"expires_at": None}


async def _payouts(calls: ProviderCalls, attempt: Row) -> list[Row] | None:
    """The payouts created since the attempt's claim that carry its reference; each destination
    replaced by its digest before anything else sees it."""
    since = int((attempt["claimed_at"] - CREATED_SLACK).timestamp())
    document = await calls.get(PAYOUTS_PATH, {"created[gte]": str(since), "limit": PAGE})
    return stripe.matching(document, attempt["client_reference"], lambda payout: stripe.record(
        payout, destination_digest=calls.digest(payout["destination"])
        if isinstance(payout.get("destination"), str) else None))


async def _refunds(calls: ProviderCalls, attempt: Row) -> list[Row] | None:
    """The refunds of the attempt's PaymentIntent that carry its reference."""
    document = await calls.get(REFUNDS_PATH, {"payment_intent": attempt["provider_payment_id"], "limit": PAGE})
    return stripe.matching(document, attempt["client_reference"],
                           lambda refund: stripe.record(refund, payment=refund.get("payment_intent")))


def payment_method(request_body: str) -> str | None:
    try:
        return stripe.form_fields(request_body).get("payment_method")
    except ValueError:
        return None


def payment_lookup(*, provider_id: str | None, client_reference: str | None, account: ProviderAccount | None = None,
                   since: datetime | None = None) -> tuple[str, dict[str, str] | None]:
    """By id; else through the Search API, or, on an account whose ``payment_lookup`` is
    ``list`` (Search needs a recent API version and is not offered everywhere), the list of
    PaymentIntents created since ``since`` (the attempt's creation, minus the hosts' skew), one
    page, matched by the metadata reference (:func:`answers.listed_lookup`), as payouts are."""
    if provider_id:
        return f"{PAYMENT_INTENTS_PATH}/{quote(provider_id, safe='')}", None
    if account is not None and account.payment_lookup == "list" and since is not None:
        return PAYMENT_INTENTS_PATH, {"created[gte]": str(int((since - CREATED_SLACK).timestamp())), "limit": PAGE}
    return f"{PAYMENT_INTENTS_PATH}/search", {"query": stripe.search_query(client_reference or "")}


def lookup_result(status_code: int, body: bytes, retry_after: str | None, *, listing: bool,
                  client_reference: str | None = None) -> Lookup:
    # Retry-After: never relied on (Stripe.retry_after_s).
    return stripe.lookup_result(status_code, body, None, listing=listing, client_reference=client_reference)


CHECKOUT = PaymentOperation(
    PAYMENT_INTENTS_PATH, stripe.payment_body, stripe.common_fields, payment_method, stripe.payment_evidence,
    payment_lookup, lookup_result,
    lambda method: f"{PAYMENT_METHODS_PATH}/{quote(method, safe='')}", stripe.payment_method_usable,
    stripe.client_secret)

OPERATIONS: dict[str, Operation | PaymentOperation] = {
    PAYMENT.name: CHECKOUT,
    PAYOUT.name: Operation(PAYOUT_TABLE, _payout_request, _payout_fields, _payouts),
    PAYMENT_REFUND.name: Operation(REFUND_TABLE,
                                lambda attempt, secret: Request(REFUNDS_PATH, refund_body(attempt)),
                                _refund_fields, _refunds),
}


class Stripe:
    """The Stripe adapter (gateway.providers.base.Provider)."""

    name = "stripe"
    # Keys may be pruned once 24 h old; Search "data is generally searchable within a minute" but
    # can lag further during outages; no request expiry; Search allows 20 reads per second.
    timings = ProviderTimings(key_window_s=86_400, visibility_delay_s=60, request_expiry_enforced=False,
                              lookups_per_s=20)
    operations = OPERATIONS  # no payout_recall (docs/decisions/0047)

    def account_problem(self, account: ProviderAccount) -> str | None:
        """A Stripe account pins its API version explicitly (the settings' default is CardCo's), in
        a form Stripe issues, and one the Search API answers unless it looks payments up by listing
        them (gateway.providers.stripe.versions)."""
        problem = versions.version_problem(account.api_version if "api_version" in account.model_fields_set else None)
        if problem is None and account.payment_lookup == "search":
            return versions.search_problem(account.api_version)
        return problem

    def headers(self, account: ProviderAccount, credential: str) -> dict[str, str]:
        """The platform's secret key and pinned version; with Connect, the connected account every
        call acts on (Stripe's "Making API calls for connected accounts": the ``Stripe-Account``
        header), its objects, idempotency keys and lists being that account's."""
        connected = {"Stripe-Account": account.stripe_account} if account.stripe_account else {}
        return {"Authorization": f"Bearer {credential}", "Stripe-Version": account.api_version,
                "Content-Type": "application/x-www-form-urlencoded", **connected}

    def rate_limited(self, status_code: int, body: bytes) -> bool:
        return stripe.rate_limited(status_code, stripe.document(body))

    def retry_after_s(self, headers: Mapping[str, str]) -> float | None:
        """Never: Stripe does not document ``Retry-After`` (its rate-limits guide asks for an
        exponential backoff), so a resend waits paygate's doubling backoff inside the send deadline
        (docs/decisions/0059) and a rate-limited lookup pauses the account for its own backoff."""
        return None

    def resend_allowed(self, headers: Mapping[str, str]) -> bool:
        return stripe.resend_allowed(headers.get("stripe-should-retry"))

    listed_kinds: tuple[str, ...] = ("payment", "payment_refund", "payout")

    def list_request(self, kind: str, start: datetime, end: datetime, cursor: str | None) -> PageRequest:
        return listing.page_request(kind, start, end, cursor)

    def list_page(self, kind: str, status_code: int, body: bytes) -> Page | ListingUnreadable:
        return listing.read_page(kind, status_code, body)

    def verifier(self, account: ProviderAccount) -> EndpointSecrets:
        return EndpointSecrets(account.id, tuple(s.get_secret_value().encode() for s in account.webhook_secrets))

    def verify(self, headers: Mapping[str, str], body: bytes, keys: Sequence[Any],
               now: datetime) -> Verified | Rejected:
        return signatures.verify(headers, body, keys, now)

    def parse(self, body: bytes) -> Notification | Unreadable:
        return notifications.parse(body)


STRIPE = Stripe()
