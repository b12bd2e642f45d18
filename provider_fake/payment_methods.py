"""Payment methods can expire (extension, docs/rehearsing-incidents.md "Payment methods").

A payment-method token is usable until it expires: `pm_card_expired` always has, and
`POST /_control/payment_methods/{id}/expire` expires any other from now on (by the fake clock).
`GET /v1/payment_methods/{id}` answers `{"object": "payment_method", "id", "status": "usable" |
"expired", "expired_at"}` (404 for a value that is not a `pm_...` token); a payment created with
an expired method is declined, 402 `card_declined` with the payment's `failure_code`
`expired_card`, so a resend of a stored request whose token has expired cannot succeed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from provider_fake.clock import rfc3339
from provider_fake.errors import NotFound

if TYPE_CHECKING:
    from provider_fake.fake import CardCo

ALWAYS_EXPIRED = "pm_card_expired"
LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)  # when pm_card_expired expired
EXPIRED_CODE = "expired_card"


def expired_at(fake: CardCo, method: str) -> datetime | None:
    """When ``method`` expired, or None while it is usable."""
    if method == ALWAYS_EXPIRED:
        return LONG_AGO
    return fake.store.expired_methods.get(method)


def describe(fake: CardCo, method: str) -> dict[str, Any]:
    """The `payment_method` object for ``method``."""
    if not method.startswith("pm_"):
        raise NotFound()
    expired = expired_at(fake, method)
    return {"object": "payment_method", "id": method, "status": "usable" if expired is None else "expired",
            "expired_at": None if expired is None else rfc3339(expired)}


def expire(fake: CardCo, method: str) -> dict[str, Any]:
    """Expire ``method`` now; an already expired one keeps its expiry."""
    describe(fake, method)
    fake.store.expired_methods.setdefault(method, fake.clock.now())
    return describe(fake, method)
