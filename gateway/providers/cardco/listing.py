"""CardCo's listing by creation time (its extension, docs/rehearsing-incidents.md "Listing by
creation time"): ``GET /v1/{payments,refunds,payouts,payout_recalls}?created_gte&created_lt``,
oldest first, ``limit`` a page, ``starting_after`` the ``next_cursor`` of the page before. Pure.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from gateway.domain.provider_evidence import MODELS
from gateway.domain.provider_listing import Listed, Page, PageRequest, Unreadable, page_status
from gateway.domain.timestamps import rfc3339

PATHS = {"payment": "/v1/payments", "payment_refund": "/v1/refunds", "payout": "/v1/payouts",
         "payout_recall": "/v1/payout_recalls"}
OBJECTS = {"payment": "payment", "payment_refund": "refund", "payout": "payout", "payout_recall": "payout_recall"}
PAGE = 100  # the largest page CardCo allows


def page_request(kind: str, start: datetime, end: datetime, cursor: str | None) -> PageRequest:
    """The page of ``kind`` created in [start, end) after ``cursor`` (the first page without)."""
    params = {"created_gte": rfc3339(start), "created_lt": rfc3339(end), "limit": str(PAGE)}
    return PageRequest(PATHS[kind], params | ({"starting_after": cursor} if cursor else {}))


def _listed(kind: str, document: Any) -> Listed:
    model = MODELS[OBJECTS[kind]].model_validate(document)
    record = dict(document)
    if kind == "payment":
        record = model.model_dump(mode="json")
    return Listed(kind, model.id, model.client_reference, model.amount_minor, model.currency, model.status,
                  datetime.fromisoformat(document["created_at"]), record)


def read_page(kind: str, status_code: int, body: bytes) -> Page | Unreadable:
    """The page's objects and the cursor after them, or why the answer cannot be read."""
    failed = page_status(status_code)
    if failed is not None:
        return failed
    try:
        document = json.loads(body.decode("utf-8"))
        objects = tuple(_listed(kind, item) for item in document["data"])
        cursor = document.get("next_cursor") if document.get("has_more") is True else None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError, ValidationError):
        return Unreadable("provider.listing-unreadable")
    if document.get("has_more") is True and not isinstance(cursor, str):
        return Unreadable("provider.listing-unreadable")
    return Page(objects, cursor)
