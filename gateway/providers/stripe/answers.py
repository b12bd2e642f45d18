"""What Stripe's answers mean (Stripe's API reference: PaymentIntents, Payouts, Refunds,
Errors, Idempotent requests, Search; docs/decisions/0046 and 0047). Pure: no I/O.

Requests are form-encoded (``metadata[client_reference]``, the attempt's reference, is how a
lookup or a notification finds its way back). Stripe objects are read into the common evidence of
gateway.domain.provider_evidence, with Stripe's own status kept as ``native_status``:

- ``succeeded`` -> succeeded: the payment took effect;
- ``processing`` -> processing: accepted, not completed; wait for a lookup or notification;
- ``requires_action`` -> requires_action: ``next_action`` is the customer's action;
- ``requires_payment_method`` -> failed: after ``confirm=true``, the attempt with this payment method
  failed (``last_payment_error``);
- ``canceled`` -> failed: no payment (``cancellation_reason``);
- ``requires_capture`` -> processing: authorized, not captured; paygate never captures, so the
  attempt stays Started and a person sees it at its escalation deadline;
- anything else -> unknown: undocumented for a confirmed PaymentIntent.

Errors (``{"error": {"type", "code", "decline_code", "payment_intent"}}``): 402 ``card_error`` is a
decline (failed); 400 ``idempotency_error`` is our key reused with other parameters (``key_in_use``:
not yet known, escalated, docs/decisions/0009); 409 ``idempotency_key_in_use`` is a concurrent
request under the same key (unknown: the other one may take effect); other 400s, 401, 403, 404 and
429 are documented no-effect rejections (rate limiters and validation run before the idempotency
layer; a legacy 400 ``rate_limit`` is a 429, :func:`rate_limited`); 5xx is indeterminate
(Stripe: "treat requests that return 500 errors as indeterminate").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

from pydantic import ValidationError

from gateway.domain.attempts import Evidence
from gateway.domain.effect_manifest import ManifestUnbuildable
from gateway.domain.provider_evidence import (
    Lookup,
    NextAction,
    PaymentObject,
    lookup_answer,
    object_evidence,
)

CLIENT_REFERENCE = "metadata[client_reference]"
# PaymentIntent statuses in the common vocabulary (see the module docstring).
INTENT_STATUSES = {"succeeded": "succeeded", "processing": "processing", "requires_action": "requires_action",
                   "requires_payment_method": "failed", "canceled": "failed", "requires_capture": "processing"}
REJECTED_TYPES = frozenset({"invalid_request_error", "authentication_error", "permission_error"})


def form(pairs: list[tuple[str, str]]) -> str:
    """A form body in exactly the order given (the bytes every send of an attempt repeats)."""
    return urlencode(pairs)


def form_fields(body: bytes | str) -> dict[str, str]:
    """A form body's parameters; ManifestUnbuildable for one that is not ``application/x-www-form-urlencoded``."""
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=True)
    except (UnicodeDecodeError, ValueError):
        raise ManifestUnbuildable("the request body is not a form") from None
    fields = dict(pairs)
    if len(fields) != len(pairs):
        raise ManifestUnbuildable("the request body repeats a parameter")
    return fields


def common_fields(body: bytes | str, **renamed: str) -> dict[str, Any]:
    """A form body's business fields in the common names a manifest commits to: ``amount`` as the
    integer ``amount_minor``, ``currency`` upper-case, ``metadata[client_reference]`` as
    ``client_reference``, and each ``renamed`` Stripe name under its common one."""
    fields: dict[str, Any] = form_fields(body)
    if "amount" in fields:
        amount = fields.pop("amount")
        if not amount.isdigit():
            raise ManifestUnbuildable("the request's amount is not an integer")
        fields["amount_minor"] = int(amount)
    if "currency" in fields:
        fields["currency"] = fields["currency"].upper()
    if CLIENT_REFERENCE in fields:
        fields["client_reference"] = fields.pop(CLIENT_REFERENCE)
    for common, native in renamed.items():
        if native in fields:
            fields[common] = fields.pop(native)
    return fields


def payment_body(*, amount_minor: int, currency: str, payment_method: str, client_reference: str,
                 return_url: str | None = None) -> str:
    """``POST /v1/payment_intents``: created and confirmed in one request, server-side, with the
    payment method named by its token (never card data) and the attempt's reference as metadata.

    With a ``return_url`` (Stripe: "The URL to redirect your customer back to after they
    authenticate or cancel their payment on the payment method's app or site"; only with
    ``confirm=true``), redirects are allowed, and a card that needs 3-D Secure answers
    ``next_action.type`` ``redirect_to_url``, which a plain page can follow. Without one, Stripe
    requires ``allow_redirects=never`` and such a card answers ``use_stripe_sdk`` (Stripe.js)."""
    redirects = [("return_url", return_url)] if return_url is not None else [
        ("automatic_payment_methods[allow_redirects]", "never")]
    return form([("amount", str(amount_minor)), ("currency", currency.lower()), ("payment_method", payment_method),
                 ("confirm", "true"), ("automatic_payment_methods[enabled]", "true"), *redirects,
                 (CLIENT_REFERENCE, client_reference)])


def _metadata_reference(document: dict[str, Any]) -> str | None:
    metadata = document.get("metadata")
    reference = metadata.get("client_reference") if isinstance(metadata, dict) else None
    return reference if isinstance(reference, str) else None


def _failure(document: dict[str, Any]) -> str | None:
    error = document.get("last_payment_error")
    if isinstance(error, dict):
        code = error.get("decline_code") or error.get("code")
        if isinstance(code, str):
            return code
    reason = document.get("cancellation_reason")
    return reason if isinstance(reason, str) else None


def customer_action(action: dict[str, Any]) -> dict[str, Any]:
    """Stripe's ``next_action`` as the checkout page reads it: a ``redirect_to_url`` action also
    carries its ``url`` at the top, where CardCo's does, so one page follows both; Stripe's own
    fields stay beside it."""
    redirect = action.get("redirect_to_url")
    if action.get("type") == "redirect_to_url" and isinstance(redirect, dict) and isinstance(redirect.get("url"), str):
        return {**action, "url": redirect["url"]}
    return action


def payment_intent(document: Any) -> PaymentObject:
    """A PaymentIntent in the common shape; ValueError (or ValidationError) if it is not one."""
    if not isinstance(document, dict) or document.get("object") != "payment_intent":
        raise ValueError("not a payment_intent")
    native = document.get("status")
    status = INTENT_STATUSES.get(native, native) if isinstance(native, str) else native
    action = document.get("next_action")
    currency = document.get("currency")
    return PaymentObject.model_validate({
        "object": "payment", "id": document.get("id"), "client_reference": _metadata_reference(document),
        "amount_minor": document.get("amount"), "currency": currency.upper() if isinstance(currency, str) else currency,
        "status": status, "native_status": native,
        "failure_code": (_failure(document) or native) if status == "failed" else None,
        "next_action": NextAction.model_validate(customer_action(action))
        if status == "requires_action" and isinstance(action, dict)
        else None})



def _error(document: Any) -> dict[str, Any]:
    found = document.get("error") if isinstance(document, dict) else None
    return found if isinstance(found, dict) else {}


def payment_evidence(account: str, status_code: int, body: bytes) -> Evidence:
    """Classify Stripe's answer to ``POST /v1/payment_intents`` (see the module docstring)."""
    details = {"http_status": status_code}
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        reason = "provider.malformed-body" if body.strip() else "provider.empty-body"
        return Evidence.unknown(account, reason, **details)
    if status_code == 200:
        try:
            return object_evidence(account, payment_intent(document), **details)
        except (ValueError, ValidationError):
            return Evidence.unknown(account, "provider.malformed-body", **details)
    error = _error(document)
    kind, code = error.get("type"), error.get("code")
    if status_code == 402 and kind == "card_error":
        try:
            declined: PaymentObject | None = payment_intent(error.get("payment_intent"))
        except (ValueError, ValidationError):
            declined = None
        reason = error.get("decline_code") or code or "card_declined"
        return Evidence(finding="failed", provider_account=account, reason=str(reason),
                        provider_id=declined.id if declined else None,
                        provider_status="requires_payment_method",
                        amount_minor=declined.amount_minor if declined else None,
                        currency=declined.currency if declined else None, details=details)
    if status_code == 400 and kind == "idempotency_error":
        # Our key already carries a request with other parameters: this send did nothing, but it
        # says nothing about the attempt, and a person must find out who reused it (0009).
        return Evidence(finding="key_in_use", provider_account=account, reason="provider.idempotency-key-in-use",
                        details=details)
    if status_code == 409:
        # A request under the same key is still executing: it may yet take effect.
        return Evidence.unknown(account, f"provider.conflict.{code or kind or 'no-code'}", **details)
    if rate_limited(status_code, document) or (status_code in (400, 401, 403, 404) and kind in REJECTED_TYPES):
        return Evidence(finding="rejected", provider_account=account, reason=str(code or kind or "rate_limit"),
                        details=details)
    if status_code >= 500:
        return Evidence.unknown(account, f"provider.status-{status_code}", **details)
    return Evidence.unknown(account, f"provider.undocumented.{status_code}.{code or kind or 'no-code'}", **details)


def rate_limited(status_code: int, document: Any) -> bool:
    """A 429, or the legacy 400 with code ``rate_limit`` that API versions before 2015-09-08
    answered instead (Stripe's changelog, 2015-09-08: "Rate-limited requests now return an HTTP 429
    error, no longer including the rate_limit field"): a rate limit, never a decline or a
    validation failure. Stripe's limiters run before its idempotency layer: no effect."""
    return status_code == 429 or (status_code == 400 and _error(document).get("code") == "rate_limit")


def document(body: bytes) -> Any:
    """A body as JSON, or None."""
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def client_secret(status_code: int, body: bytes) -> str | None:
    """The PaymentIntent's ``client_secret`` from a 200 read of it, else None. It lets whoever holds
    it confirm the payment with Stripe.js: the caller hands it to the owning customer and keeps it
    nowhere (docs/decisions/0078)."""
    read = document(body) if status_code == 200 else None
    secret = read.get("client_secret") if isinstance(read, dict) else None
    return secret if isinstance(secret, str) and secret else None


def resend_allowed(should_retry: str | None) -> bool:
    """``Stripe-Should-Retry: false`` says the request must not be sent again; ``true``, or no
    header, leaves the decision to the classification table, which resends only a documented
    no-effect rejection (docs/decisions/0059)."""
    return (should_retry or "").strip().lower() != "false"


def search_query(client_reference: str) -> str:
    """The Search Query Language clause for one reference (quotes and backslashes escaped)."""
    escaped = client_reference.replace("\\", "\\\\").replace("'", "\\'")
    return f"metadata['client_reference']:'{escaped}'"


def lookup_result(status_code: int, body: bytes, retry_after: str | None, *, listing: bool,
                  client_reference: str | None = None) -> Lookup:
    """Classify ``GET /v1/payment_intents/{id}`` (``listing`` False) or
    ``GET /v1/payment_intents/search`` (``listing`` True). Search results lag behind writes, so an
    empty search is "not found", never proof of absence: the recovery loop resends only under the
    attempt's key, which Stripe answers with the saved result of any earlier send. A legacy 400
    ``rate_limit`` is rate-limited like a 429 (:func:`rate_limited`)."""
    found = document(body)
    if rate_limited(status_code, found):
        status_code = 429
    if status_code == 200 and listing and isinstance(found, dict) and found.get("object") == "list":
        return listed_lookup(found, client_reference)
    return lookup_answer(status_code, body, retry_after, listing=listing, read=payment_intent)


def listed_lookup(listed: dict[str, Any], client_reference: str | None) -> Lookup:
    """A page of ``GET /v1/payment_intents`` read as a lookup by reference: the intents whose
    ``metadata['client_reference']`` is the attempt's; none on a page with more after it is a
    failed lookup (the list cannot show the payment is absent), as for payouts (:func:`matching`)."""
    data = listed.get("data")
    if not isinstance(data, list) or client_reference is None:
        return Lookup("failed", reason="provider.lookup-unreadable")
    try:
        found = [payment_intent(item) for item in data
                 if isinstance(item, dict) and _metadata_reference(item) == client_reference]
    except (ValueError, ValidationError):
        return Lookup("failed", reason="provider.lookup-unreadable")
    if len(found) > 1:
        return Lookup("ambiguous", reason="provider.lookup-ambiguous")
    if found:
        return Lookup("found", found[0])
    if listed.get("has_more") is not False:
        return Lookup("failed", reason="provider.lookup-list-incomplete")
    return Lookup("not-found")


def payment_method_usable(status_code: int, body: bytes, now: datetime) -> bool | None:
    """``GET /v1/payment_methods/{id}``: a card is usable through the end of its expiry month
    (``card.exp_month``/``exp_year``); another method while Stripe returns it. False when Stripe
    does not know it (404 ``resource_missing``); None when the check itself failed."""
    if status_code == 404:
        return False
    if status_code != 200:
        return None
    try:
        document = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("object") != "payment_method":
        return None
    card = document.get("card")
    if not isinstance(card, dict):
        return True
    month, year = card.get("exp_month"), card.get("exp_year")
    if not isinstance(month, int) or not isinstance(year, int):
        return None
    return (year, month) >= (now.year, now.month)


# Payouts and refunds: the pipeline's records (their versioned tables are gateway.providers.stripe.tables).

def record(document: dict[str, Any], **identity: Any) -> dict[str, Any]:
    """A Stripe payout or refund as the pipeline's common record (amount, upper-case currency, the
    metadata reference, status and failure code), plus the kind's ``identity`` fields."""
    currency = document.get("currency")
    failure = document.get("failure_code") or document.get("failure_reason")
    return {"id": document.get("id"), "client_reference": _metadata_reference(document),
            "amount_minor": document.get("amount"), "currency": currency.upper() if isinstance(currency, str) else None,
            "status": document.get("status"), "failure_code": failure if isinstance(failure, str) else None,
            **identity}


def matching(document: Any, client_reference: str, normalize: Callable[[dict[str, Any]], dict[str, Any]]
             ) -> list[dict[str, Any]] | None:
    """The records of a list answer whose metadata names ``client_reference``; None when the answer
    is unreadable or has more pages (the list cannot show the record is absent)."""
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list) or document.get("has_more") is True:
        return None
    return [normalize(item) for item in data
            if isinstance(item, dict) and _metadata_reference(item) == client_reference]
