"""Stripe's lists by creation time (Stripe API reference, "List all PaymentIntents", "List all
refunds", "List all payouts"; "Pagination"): ``GET /v1/{payment_intents,refunds,payouts}`` with
``created[gte]``, ``created[lt]`` (Unix seconds), ``limit`` (at most 100) and ``starting_after``
(the last id of the page before), answered ``{"object": "list", "data", "has_more"}`` newest
first. Stripe has no payout recall (docs/decisions/0047): nothing to list. Pure.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from gateway.domain.provider_listing import Listed, Page, PageRequest, Unreadable, page_status
from gateway.providers.stripe.answers import payment_intent, record

PATHS = {"payment": "/v1/payment_intents", "payment_refund": "/v1/refunds", "payout": "/v1/payouts"}
OBJECTS = {"payment": "payment_intent", "payment_refund": "refund", "payout": "payout"}
PAGE = 100  # Stripe's largest list page


def page_request(kind: str, start: datetime, end: datetime, cursor: str | None) -> PageRequest:
    """The page of ``kind`` created in [start, end) (whole seconds: Stripe's ``created`` has no
    finer grain, and the caller keeps only what falls inside the window) after ``cursor``."""
    params = {"created[gte]": str(math.floor(start.timestamp())), "created[lt]": str(math.ceil(end.timestamp())),
              "limit": str(PAGE)}
    return PageRequest(PATHS[kind], params | ({"starting_after": cursor} if cursor else {}))


def _identity(kind: str, document: dict[str, Any]) -> dict[str, Any]:
    if kind == "payout":
        return {"destination_token": document.get("destination")}
    return {"payment": document.get("payment_intent")}


def _listed(kind: str, document: Any) -> Listed:
    if not isinstance(document, dict) or document.get("object") != OBJECTS[kind]:
        raise ValueError(f"not a {OBJECTS[kind]}")
    created = datetime.fromtimestamp(int(document["created"]), UTC)
    if kind == "payment":
        payment = payment_intent(document)
        return Listed(kind, payment.id, payment.client_reference, payment.amount_minor, payment.currency,
                      payment.status, created, payment.model_dump(mode="json"))
    common = record(document, **_identity(kind, document))
    if not isinstance(common["id"], str) or not isinstance(common["amount_minor"], int):
        raise ValueError(f"an unreadable {OBJECTS[kind]}")
    return Listed(kind, common["id"], common["client_reference"], common["amount_minor"], common["currency"],
                  common["status"], created, common)


def read_page(kind: str, status_code: int, body: bytes) -> Page | Unreadable:
    """The page's objects and the cursor after them (the last id while ``has_more``)."""
    failed = page_status(status_code)
    if failed is not None:
        return failed
    try:
        document = json.loads(body.decode("utf-8"))
        if document.get("object") != "list":
            return Unreadable("provider.listing-unreadable")
        objects = tuple(_listed(kind, item) for item in document["data"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError, ValidationError):
        return Unreadable("provider.listing-unreadable")
    more = document.get("has_more") is True
    if more and not objects:
        return Unreadable("provider.listing-unreadable")
    return Page(objects, objects[-1].id if more else None)
