"""What a provider's listing by creation time says, in common shapes (a provider-side
reconciliation pages through it: every payment, refund, payout and recall the provider created in
a window).

Each adapter's pure listing module builds the request of one page (:class:`PageRequest`) and reads
its answer into a :class:`Page` of :class:`Listed` objects: the provider's id, the kind (the
attempt kind it would belong to: ``payment``, ``payment_refund``, ``payout``, ``payout_recall``),
the client reference, amount, upper-case currency, creation time, and ``record``: the object in
the common shape the evidence of its kind is read from (a payment's :class:`PaymentObject`
document; a pipeline kind's common record, its destination still a token the calls replace by a
digest). A page that cannot be read is :class:`Unreadable`, never an empty page: a listing that
failed proves nothing absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class PageRequest:
    path: str
    params: dict[str, str]


@dataclass(frozen=True)
class Listed:
    kind: str
    id: str
    client_reference: str | None
    amount_minor: int | None
    currency: str | None
    status: str | None
    created_at: datetime
    record: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Page:
    """One page; ``cursor`` continues the listing after it, None on the last page."""

    objects: tuple[Listed, ...]
    cursor: str | None


@dataclass(frozen=True)
class Unreadable:
    reason: str


def page_status(status_code: int) -> Unreadable | None:
    """Every answer but a 200 is a failed read (a 429 is the caller's to see first)."""
    return None if status_code == 200 else Unreadable(f"provider.listing-status-{status_code}")
