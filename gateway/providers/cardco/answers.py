"""What CardCo's answers mean (API.md, "provider_fake: CardCo"; seed 004, payment client).

:func:`payment_evidence` classifies the answer to ``POST /v1/payments`` and :func:`object_evidence`
a payment object seen in a lookup or a notification. Every answer that is not documented, or
cannot be read completely, is ``unknown``: an empty, truncated, malformed or unrecognized body
says nothing about whether the payment took effect (seed 004: "Unknown is never rounded off").
Documented no-effect rejections (400 ``invalid_request``, 401, 429) are ``rejected``; a decline
(402 ``card_declined``) is ``failed``; a 500 is indeterminate (``unknown``); 409
``idempotency_key_in_use`` is ``key_in_use``: not yet known, and escalated.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from gateway.domain.attempts import Evidence
from gateway.domain.provider_evidence import Lookup, PaymentObject, lookup_answer, object_evidence

REJECTIONS = {400: "invalid_request", 401: "unauthorized", 429: "rate_limited"}



def _declined_payment(error: dict[str, Any]) -> PaymentObject | None:
    """The declined payment a 402 carries, when it is readable; the decline stands either way."""
    try:
        return PaymentObject.model_validate(error.get("payment"))
    except ValidationError:
        return None


def _json(body: bytes) -> Any:
    return json.loads(body.decode("utf-8"))


def payment_evidence(account: str, status_code: int, body: bytes) -> Evidence:
    """Classify CardCo's answer to a create-payment request."""
    details = {"http_status": status_code}
    if not body.strip():
        return Evidence.unknown(account, "provider.empty-body", **details)
    try:
        document = _json(body)
    except (UnicodeDecodeError, ValueError):
        return Evidence.unknown(account, "provider.malformed-body", **details)
    if status_code == 200:
        try:
            return object_evidence(account, PaymentObject.model_validate(document), **details)
        except ValidationError:
            return Evidence.unknown(account, "provider.malformed-body", **details)
    found = document.get("error") if isinstance(document, dict) else None
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    code = error.get("code")
    if status_code == 402 and code == "card_declined":
        declined = _declined_payment(error)
        return Evidence(finding="failed", provider_account=account, reason="card_declined",
                        provider_id=declined.id if declined else None, provider_status="failed",
                        amount_minor=declined.amount_minor if declined else None,
                        currency=declined.currency if declined else None, details=details)
    if status_code == 409 and code == "idempotency_key_in_use":
        # Our key already carries a request with other parameters: this send did nothing, but
        # it says nothing about the attempt either, and a person must find out who reused the
        # key (docs/decisions/0009).
        return Evidence(finding="key_in_use", provider_account=account, reason="provider.idempotency-key-in-use",
                        details=details)
    if status_code in REJECTIONS and code == REJECTIONS[status_code]:
        return Evidence(finding="rejected", provider_account=account, reason=code, details=details)
    if status_code >= 500:
        return Evidence.unknown(account, f"provider.status-{status_code}", **details)
    return Evidence.unknown(account, f"provider.undocumented.{status_code}.{code or 'no-code'}", **details)


def lookup_result(status_code: int, body: bytes, retry_after: str | None, *, listing: bool) -> Lookup:
    """Classify the answer to ``GET /v1/payments/{id}`` (``listing`` False) or
    ``GET /v1/payments?client_reference=`` (``listing`` True)."""
    return lookup_answer(status_code, body, retry_after, listing=listing, read=PaymentObject.model_validate)


def payment_method_usable(status_code: int, body: bytes) -> bool | None:
    """Classify ``GET /v1/payment_methods/{id}`` (CardCo extension): True while
    CardCo says ``usable``; False once it says ``expired``, or does not know the token (404);
    None when the check itself failed (an error status, an unreadable body): that proves
    nothing either way, like a failed lookup."""
    if status_code == 404:
        return False
    if status_code != 200:
        return None
    try:
        document = _json(body)
    except (UnicodeDecodeError, ValueError):
        return None
    status = document.get("status") if isinstance(document, dict) else None
    return {"usable": True, "expired": False}.get(status) if isinstance(status, str) else None
