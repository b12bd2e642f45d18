"""PaymentIntents, Refunds and Payouts as Stripe shows them, kept as the fake's own objects.

docs/rehearsing-incidents.md "Stripe dialect" and docs/decisions/0044: a Stripe object is a
CardCo object (same store, ledger, schedule, sequence and faults) that renders itself in Stripe's
shape. Internally the status keeps CardCo's vocabulary, so the ledger and its invariants read the
same for both dialects, and the rendering maps it onto Stripe's:

| internal | PaymentIntent | Refund | Payout |
|---|---|---|---|
| `succeeded`, `refunded` | `succeeded` (a refund shows on the charge) | `succeeded` | |
| `failed` | `requires_payment_method` + `last_payment_error` | `failed` + `failure_reason` | `failed` |
| `processing` | `processing` | `pending` | `pending` |
| `requires_action`, `requires_capture`, `canceled` | the same | | |
| `in_transit`, `paid`, `canceled` | | | the same |
| `returned` (control API) | | | `failed` |

Events: `payment_intent.<succeeded|payment_failed|processing|requires_action|canceled|
amount_capturable_updated>`, `charge.refunded` (carrying the charge), `refund.<created|updated|
failed>`, `payout.<created|updated|paid|failed|canceled>`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar

from provider_fake.objects import Payment, Payout, Refund, Scheduled, new_id
from provider_fake.stripe.methods import payment_error

INTENT_STATUSES = {"failed": "requires_payment_method", "refunded": "succeeded"}
INTENT_EVENTS = {
    "succeeded": "payment_intent.succeeded",
    "failed": "payment_intent.payment_failed",
    "processing": "payment_intent.processing",
    "requires_action": "payment_intent.requires_action",
    "requires_capture": "payment_intent.amount_capturable_updated",
    "canceled": "payment_intent.canceled",
    "refunded": "charge.refunded",
}
# Statuses in which the PaymentIntent has made a charge (its `latest_charge`).
CHARGED = frozenset({"succeeded", "failed", "processing", "requires_capture"})
PAYOUT_FAILURES = {
    "account_closed": "The bank account has been closed.",
    "no_account": "The bank account details on file are probably incorrect. No bank account could be located "
    "with those details.",
    "insufficient_funds": "Your Stripe account has insufficient funds to cover the payout.",
    "invalid_account_number": "The bank account number appears to be invalid.",
}


def unix(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp())


@dataclass(kw_only=True)
class PaymentIntent(Payment):
    """A PaymentIntent; `client_reference` is its `metadata[client_reference]` ("" if none)."""

    id_prefix: ClassVar[str] = "pi"

    metadata: dict[str, str]
    payment_method: str | None = None
    livemode: bool = False
    capture_method: str = "automatic_async"
    description: str | None = None
    return_url: str | None = None
    latest_charge: str | None = None
    canceled_at: datetime | None = None
    cancellation_reason: str | None = None
    client_secret: str = field(default_factory=lambda: new_id("secret"))
    versions: list[tuple[datetime, dict[str, Any]]] = field(default_factory=list)  # (announced at, public())

    def change(self, status: str, failure_code: str | None = None) -> None:
        super().change(status, failure_code)
        self.charge_if_attempted()

    def charge_if_attempted(self) -> None:
        """Confirming with a payment method makes a charge (also a declined one)."""
        if self.latest_charge is None and self.status in CHARGED:
            self.latest_charge = new_id("ch")

    def stripe_status(self) -> str:
        return INTENT_STATUSES.get(self.status, self.status)

    def public(self) -> dict[str, Any]:
        status = self.stripe_status()
        paid = self.status in ("succeeded", "refunded")
        error = None
        if self.status == "failed" and self.failure_code is not None:
            error = payment_error(self.failure_code, self.latest_charge, self.payment_method, self.created_at)
        return {
            "id": self.id,
            "object": "payment_intent",
            "amount": self.amount_minor,
            "amount_capturable": self.amount_minor if status == "requires_capture" else 0,
            "amount_received": self.amount_minor if paid else 0,
            "canceled_at": unix(self.canceled_at),
            "cancellation_reason": self.cancellation_reason,
            "capture_method": self.capture_method,
            "client_secret": f"{self.id}_{self.client_secret}",
            "confirmation_method": "automatic",
            "created": unix(self.created_at),
            "currency": self.currency,
            "customer": None,
            "description": self.description,
            "last_payment_error": error,
            "latest_charge": self.latest_charge,
            "livemode": self.livemode,
            "metadata": dict(self.metadata),
            "next_action": self._next_action(),
            "payment_method": self.payment_method,
            "payment_method_types": ["card"],
            "processing": None,
            "status": status,
        }

    def _next_action(self) -> dict[str, Any] | None:
        """3-D Secure: `redirect_to_url` when the request gave a `return_url`, else
        `use_stripe_sdk`; both lead to the fake's authenticate control endpoint."""
        if self.next_action is None:
            return None
        url = self.next_action["url"]
        if self.return_url is not None:
            return {"type": "redirect_to_url", "redirect_to_url": {"return_url": self.return_url, "url": url}}
        return {"type": "use_stripe_sdk", "use_stripe_sdk": {"type": "three_d_secure_redirect", "stripe_js": url}}

    def charge(self) -> dict[str, Any]:
        """The PaymentIntent's latest charge (Stripe's Charge object, the parts paygate reads)."""
        paid = self.status in ("succeeded", "refunded")
        failed = self.status == "failed"
        error = payment_error(self.failure_code, None, None, self.created_at) if failed and self.failure_code else None
        return {
            "id": self.latest_charge,
            "object": "charge",
            "amount": self.amount_minor,
            "amount_captured": self.amount_minor if paid else 0,
            "amount_refunded": self.amount_minor if self.status == "refunded" else 0,
            "captured": paid,
            "created": unix(self.created_at),
            "currency": self.currency,
            "description": self.description,
            "failure_code": error["code"] if error else None,
            "failure_message": error["message"] if error else None,
            "livemode": self.livemode,
            "metadata": dict(self.metadata),
            "paid": paid,
            "payment_intent": self.id,
            "payment_method": self.payment_method,
            "refunded": self.status == "refunded",
            "status": "failed" if failed else "pending" if self.status == "processing" else "succeeded",
        }

    def event_type(self) -> str:
        return INTENT_EVENTS.get(self.status, "payment_intent.created")

    def remember(self, now: datetime) -> None:
        self.versions.append((now, self.public()))

    def indexed(self, as_of: datetime) -> dict[str, Any] | None:
        """What Stripe's search index shows: the last state announced by `as_of` (None before the
        first), the current one if none was ever announced."""
        if not self.versions:
            return self.public()
        shown = [document for at, document in self.versions if at <= as_of]
        return shown[-1] if shown else None

    def event_object(self) -> dict[str, Any]:
        return self.charge() if self.status == "refunded" else self.public()


@dataclass(kw_only=True)
class StripeRefund(Refund):
    """A Refund of a PaymentIntent's charge, in full; it announces its own changes too."""

    announces_itself: ClassVar[bool] = True

    charge: str | None
    metadata: dict[str, str]
    reason: str | None = None

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "refund",
            "amount": self.amount_minor,
            "balance_transaction": None,
            "charge": self.charge,
            "created": unix(self.created_at),
            "currency": self.currency,
            "destination_details": None,
            **({"failure_reason": self.failure_code or "unknown"} if self.status == "failed" else {}),
            "metadata": dict(self.metadata),
            "payment_intent": self.payment,
            "reason": self.reason,
            "receipt_number": None,
            "source_transfer_reversal": None,
            "status": "pending" if self.status == "processing" else self.status,
            "transfer_reversal": None,
        }

    def event_type(self) -> str:
        if self.status == "failed":
            return "refund.failed"
        return "refund.created" if self.sequence == 1 else "refund.updated"


@dataclass(kw_only=True)
class StripePayout(Payout):
    """A Payout: `pending` for `processing_complete_after_s`, then `in_transit` as long again,
    then `paid` (or `failed`); `destination_token` is its `destination`."""

    metadata: dict[str, str]
    method: str = "standard"
    description: str | None = None
    statement_descriptor: str | None = None
    livemode: bool = False
    arrival_date: datetime | None = None
    landing: Scheduled | None = None

    def start_processing(self, now: datetime, after_s: float, final_status: str, failure_code: str) -> None:
        self.status = "processing"
        self.arrival_date = now + timedelta(seconds=2 * after_s)
        self.landing = Scheduled(self.arrival_date, final_status, failure_code if final_status == "failed" else None)
        self.schedule(now + timedelta(seconds=after_s), "in_transit")

    def apply_schedule(self) -> None:
        landing = self.landing
        super().apply_schedule()
        if self.status == "in_transit" and landing is not None:
            self.scheduled = landing

    def change(self, status: str, failure_code: str | None = None) -> None:
        super().change(status, failure_code)
        self.landing = None

    def public(self) -> dict[str, Any]:
        failed = self.status in ("failed", "returned")
        return {
            "id": self.id,
            "object": "payout",
            "amount": self.amount_minor,
            "arrival_date": unix(self.arrival_date or self.created_at),
            "automatic": False,
            "balance_transaction": None,
            "created": unix(self.created_at),
            "currency": self.currency,
            "description": self.description,
            "destination": self.destination_token,
            "failure_balance_transaction": None,
            "failure_code": self.failure_code if failed else None,
            "failure_message": PAYOUT_FAILURES.get(self.failure_code or "", "The payout failed.") if failed else None,
            "livemode": self.livemode,
            "metadata": dict(self.metadata),
            "method": self.method,
            "original_payout": None,
            "reconciliation_status": "not_applicable",
            "reversed_by": None,
            "source_type": "card",
            "statement_descriptor": self.statement_descriptor,
            "status": {"processing": "pending", "returned": "failed"}.get(self.status, self.status),
            "type": "card" if self.destination_token.startswith("card_") else "bank_account",
        }

    def event_type(self) -> str:
        if self.sequence == 1:
            return "payout.created"
        stripe_status = self.public()["status"]
        return f"payout.{stripe_status}" if stripe_status in ("paid", "failed", "canceled") else "payout.updated"


# Each object's name in Stripe's "No such <name>" errors, and the parameter naming it in a path.
STRIPE_NAMES: dict[type, tuple[str, str]] = {
    PaymentIntent: ("payment_intent", "intent"),
    StripeRefund: ("refund", "id"),
    StripePayout: ("payout", "payout"),
}
