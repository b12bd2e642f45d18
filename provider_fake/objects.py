"""Payments and payouts as CardCo keeps them.

API.md "provider_fake: CardCo" and its payload example: every object carries a `sequence` that
increases by one with each status change, and each change is announced by a webhook of type
`<object>.<status>`. A scheduled change (processing completing, a 3-D Secure action expiring, a
payout being paid) is kept on the object as `due_at` and applied by the fake clock.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, Protocol, Self

from provider_fake.clock import rfc3339


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


class MoneyRequest(Protocol):
    """What every create request carries."""

    client_reference: str
    amount_minor: int
    currency: str


@dataclass
class Scheduled:
    """A status change CardCo will make on its own once the fake clock reaches `at`."""

    at: datetime
    status: str
    failure_code: str | None = None


@dataclass(kw_only=True)
class ProviderObject:
    """What payments and payouts share: identity, money, status and the ledger view."""

    kind: ClassVar[str]
    id_prefix: ClassVar[str]

    id: str
    account: str
    client_reference: str
    idempotency_key: str
    amount_minor: int
    currency: str
    status: str
    created_at: datetime
    failure_code: str | None = None
    sequence: int = 1
    hidden_until: datetime | None = None
    forgotten: bool = False  # lost by the provider (control API, extension): no read shows it
    scheduled: Scheduled | None = None

    @classmethod
    def taken(
        cls,
        *,
        account: str,
        idempotency_key: str,
        request: MoneyRequest,
        now: datetime,
        status: str,
        **extra: Any,
    ) -> Self:
        """A new object for a create request that is taking effect now."""
        return cls(
            id=new_id(cls.id_prefix),
            account=account,
            client_reference=request.client_reference,
            idempotency_key=idempotency_key,
            amount_minor=request.amount_minor,
            currency=request.currency,
            status=status,
            created_at=now,
            **extra,
        )

    def public(self) -> dict[str, Any]:
        """The API representation (API.md's CardCo payload `data.object`)."""
        return {
            "object": self.kind,
            "id": self.id,
            "client_reference": self.client_reference,
            "amount_minor": self.amount_minor,
            "currency": self.currency,
            "status": self.status,
            "failure_code": self.failure_code,
            **self.extra_fields(),
            "sequence": self.sequence,
        }

    def extra_fields(self) -> dict[str, Any]:
        return {}

    def event_type(self) -> str:
        """The webhook type announcing the current status."""
        return f"{self.kind}.{self.status}"

    def event_object(self) -> dict[str, Any]:
        """What that webhook carries as `data.object` (the API representation)."""
        return self.public()

    def remember(self, now: datetime) -> None:
        """Called with each announced change: an object a lagging index shows keeps its states."""

    def ledger_entry(self) -> dict[str, Any]:
        """API.md "CardCo control API": the ledger's view of one object."""
        return {
            "id": self.id,
            "account": self.account,
            "client_reference": self.client_reference,
            "idempotency_key": self.idempotency_key,
            "amount_minor": self.amount_minor,
            "currency": self.currency,
            "status": self.status,
            "created_at": rfc3339(self.created_at),
        }

    def visible_at(self, now: datetime) -> bool:
        return self.hidden_until is None or now >= self.hidden_until

    def change(self, status: str, failure_code: str | None = None) -> None:
        """Move to a new status; every change bumps the sequence and clears any schedule."""
        self.status = status
        self.failure_code = failure_code
        self.sequence += 1
        self.scheduled = None

    def schedule(self, at: datetime, status: str, failure_code: str | None = None) -> None:
        self.scheduled = Scheduled(at, status, failure_code)

    def start_processing(self, now: datetime, after_s: float, final_status: str, failure_code: str) -> None:
        """`processing` now; `final_status` (with `failure_code` if that is `failed`) later."""
        self.status = "processing"
        self.schedule(
            now + timedelta(seconds=after_s), final_status, failure_code if final_status == "failed" else None
        )

    def apply_schedule(self) -> None:
        if self.scheduled is None:
            raise RuntimeError(f"{self.id} has no scheduled change")
        self.change(self.scheduled.status, self.scheduled.failure_code)


@dataclass(kw_only=True)
class Payment(ProviderObject):
    kind: ClassVar[str] = "payment"
    id_prefix: ClassVar[str] = "pay"

    next_action: dict[str, Any] | None = None
    refund: dict[str, str] | None = None  # the refund that made it `refunded`: {"id", "client_reference"}

    def extra_fields(self) -> dict[str, Any]:
        return {"next_action": self.next_action, **({"refund": self.refund} if self.refund else {})}

    def change(self, status: str, failure_code: str | None = None) -> None:
        # A next_action is only current while the payment waits for it.
        if status != "requires_action":
            self.next_action = None
        super().change(status, failure_code)

    def require_action(self, url: str, now: datetime, expires_in_s: float) -> None:
        """3-D Secure: wait for the customer until the action expires, then fail."""
        expires_at = now + timedelta(seconds=expires_in_s)
        self.status = "requires_action"
        self.next_action = {"type": "redirect_to_url", "url": url, "expires_at": rfc3339(expires_at)}
        self.schedule(expires_at, "failed", "action_expired")


@dataclass(kw_only=True)
class Payout(ProviderObject):
    kind: ClassVar[str] = "payout"
    id_prefix: ClassVar[str] = "po"

    destination_token: str
    expires_at: datetime

    def extra_fields(self) -> dict[str, Any]:
        return {"destination_token": self.destination_token, "expires_at": rfc3339(self.expires_at)}


@dataclass(kw_only=True)
class PayoutRecall(ProviderObject):
    """A request to pull a paid payout back (extension; docs/rehearsing-incidents.md): its own
    object, key and reference; the payout it names keeps its own status and history."""

    kind: ClassVar[str] = "payout_recall"
    id_prefix: ClassVar[str] = "prc"
    payout: str
    expires_at: datetime

    def extra_fields(self) -> dict[str, Any]:
        return {"payout": self.payout, "expires_at": rfc3339(self.expires_at)}

    def event_type(self) -> str:
        """`payout.recalled`, `payout.recall_failed`, `payout.recall_processing`."""
        return "payout.recalled" if self.status == "recalled" else f"payout.recall_{self.status}"


@dataclass(kw_only=True)
class Refund(ProviderObject):
    """A full refund of a succeeded payment (extension; docs/decisions/0021): its own object, key
    and reference. It announces nothing itself: when it succeeds, its payment becomes `refunded`
    and `payment.refunded` names it."""

    kind: ClassVar[str] = "refund"
    id_prefix: ClassVar[str] = "re"
    announces_itself: ClassVar[bool] = False
    payment: str
    expires_at: datetime

    def extra_fields(self) -> dict[str, Any]:
        return {"payment": self.payment, "expires_at": rfc3339(self.expires_at)}
